// The desktop window's side of closing. The app destroys its settings window when
// the user closes it (a tray app at rest holds no webview) unless a page has unsaved
// edits, so the page reports them as they appear and go. Ctrl+W closes the window
// as its close button does. Over HTTP (a browser tab) none of this applies.
import { useEffect } from "react";
import { useApi } from "../api/ApiProvider";
import { hasUnsavedChanges, onUnsavedChangesChange } from "./unsavedChanges";

/** Whether `e` is Ctrl+W (and nothing else held). */
export function isCloseShortcut(e: KeyboardEvent): boolean {
  return e.ctrlKey && !e.altKey && !e.shiftKey && !e.metaKey && e.key.toLowerCase() === "w";
}

export function useDesktopWindow() {
  const api = useApi();
  useEffect(() => {
    const report = api.desktopSetUnsavedEdits;
    const close = api.desktopCloseWindow;
    if (!report || !close) return;
    // A failed report leaves the app's last value; closing then errs on one side
    // (keeping a window, or losing a draft), so it is logged, not silent.
    const tell = (unsaved: boolean) =>
      void report(unsaved).catch((e: unknown) => console.error("reporting unsaved edits failed", e));
    const stop = onUnsavedChangesChange(tell);
    if (hasUnsavedChanges()) tell(true);
    const onKey = (e: KeyboardEvent) => {
      if (!isCloseShortcut(e)) return;
      e.preventDefault();
      void close().catch((err: unknown) => console.error("closing the window failed", err));
    };
    window.addEventListener("keydown", onKey);
    return () => {
      stop();
      window.removeEventListener("keydown", onKey);
    };
  }, [api]);
}
