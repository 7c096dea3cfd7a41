// The unsaved-changes guard: a form with edits not saved yet registers itself while
// it has them; leaving the page then asks to confirm (a sidebar link, any other
// link, a typed address or Back: see router.ts), and closing or reloading the window
// asks the browser's own question (`beforeunload`). The desktop window hears when
// edits appear and go (`onUnsavedChangesChange`): closing it then keeps the page.
import { useEffect } from "react";

/** What each guarding form would lose, by registration. */
const guards = new Map<symbol, string>();

/** Told when the page starts or stops having unsaved edits (the desktop window). */
const listeners = new Set<(unsaved: boolean) => void>();

/** Calls `listener` each time unsaved edits appear or go; returns the unsubscribe. */
export function onUnsavedChangesChange(listener: (unsaved: boolean) => void): () => void {
  listeners.add(listener);
  return () => listeners.delete(listener);
}

function tell(unsaved: boolean) {
  for (const listener of listeners) listener(unsaved);
}

/** Whether some form has unsaved edits now. */
export function hasUnsavedChanges(): boolean {
  return guards.size > 0;
}

/** The question asked before leaving a page with unsaved edits. */
export function leaveQuestion(): string {
  const what = [...new Set(guards.values())].join(", ");
  return `You have unsaved changes (${what}). Leave this page and lose them?`;
}

/** Whether the page may be left: nothing unsaved, or the user confirms losing it. */
export function confirmLeave(): boolean {
  if (guards.size === 0) return true;
  return window.confirm(leaveQuestion());
}

function onBeforeUnload(e: BeforeUnloadEvent) {
  e.preventDefault();
  // Older browsers ask only when returnValue is set.
  e.returnValue = "";
}

/** Guards the page while `dirty`; `what` names the edits in the question ("your changes to GLM"). */
export function useUnsavedChangesGuard(dirty: boolean, what: string) {
  useEffect(() => {
    if (!dirty) return;
    const id = Symbol(what);
    guards.set(id, what);
    if (guards.size === 1) {
      window.addEventListener("beforeunload", onBeforeUnload);
      tell(true);
    }
    return () => {
      guards.delete(id);
      if (guards.size === 0) {
        window.removeEventListener("beforeunload", onBeforeUnload);
        tell(false);
      }
    };
  }, [dirty, what]);
}
