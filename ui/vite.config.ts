/// <reference types="vitest/config" />
// Vite + Vitest configuration of the Switchyard settings UI.
// The same build runs inside the Tauri webview (custom protocol) and under the
// gateway's `/ui/` path, so every asset URL is relative (`base: './'`).
import { fileURLToPath } from "node:url";
import react from "@vitejs/plugin-react";
import { defineConfig } from "vite";

const uiRoot = fileURLToPath(new URL(".", import.meta.url));

export default defineConfig({
  root: uiRoot,
  base: "./",
  plugins: [react()],
  build: {
    outDir: "dist",
    emptyOutDir: true,
    target: "es2021",
  },
  server: {
    port: 5173,
    strictPort: true,
  },
  test: {
    root: uiRoot,
    environment: "jsdom",
    include: ["src/**/*.test.ts", "src/**/*.test.tsx"],
    setupFiles: ["src/test/setup.ts"],
    restoreMocks: true,
    unstubGlobals: true,
    // Whole-page tests render the app and walk it; on a loaded 2-core machine one
    // took just over the 5 s default. A real hang still fails well within CI time.
    testTimeout: 20_000,
  },
});
