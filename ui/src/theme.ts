// Light / dark theme: `prefers-color-scheme` by default, overridden by a
// `data-theme` attribute on <html> when the user picks one.
import { useEffect, useState } from "react";

export type Theme = "system" | "light" | "dark";

/** The theme choices of a select (the browser's sidebar, the desktop Preferences). */
export const THEME_OPTIONS: { value: Theme; label: string }[] = [
  { value: "system", label: "System" },
  { value: "light", label: "Light" },
  { value: "dark", label: "Dark" },
];

const STORAGE_KEY = "switchyard.theme";

export function applyTheme(theme: Theme): void {
  const root = document.documentElement;
  if (theme === "system") root.removeAttribute("data-theme");
  else root.setAttribute("data-theme", theme);
}

export function storedTheme(): Theme {
  const v = localStorage.getItem(STORAGE_KEY);
  return v === "light" || v === "dark" ? v : "system";
}

/** The browser-side theme choice, persisted in localStorage. */
export function useStoredTheme(): [Theme, (t: Theme) => void] {
  const [theme, setTheme] = useState<Theme>(storedTheme);
  useEffect(() => {
    localStorage.setItem(STORAGE_KEY, theme);
  }, [theme]);
  return [theme, setTheme];
}
