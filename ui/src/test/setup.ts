// Vitest setup: jest-dom matchers, DOM cleanup and Tauri mock reset after each test.
import "@testing-library/jest-dom/vitest";
import { cleanup } from "@testing-library/react";
import { clearMocks } from "@tauri-apps/api/mocks";
import { afterEach } from "vitest";

afterEach(() => {
  cleanup();
  clearMocks();
  window.location.hash = "";
  sessionStorage.clear();
  localStorage.clear();
});
