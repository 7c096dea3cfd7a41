// Entry point: pick the transport, then render the app.
import { StrictMode } from "react";
import { createRoot } from "react-dom/client";
import { App } from "./App";
import { Bootstrap } from "./api/Bootstrap";
import "./styles.css";

const root = document.getElementById("root");
if (root) {
  createRoot(root).render(
    <StrictMode>
      <Bootstrap>
        <App />
      </Bootstrap>
    </StrictMode>,
  );
}
