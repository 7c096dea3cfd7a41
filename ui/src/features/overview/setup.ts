// Ready-to-paste client setup (CLIENTS.md): Claude Code reads ANTHROPIC_BASE_URL and
// ANTHROPIC_AUTH_TOKEN (sent as a bearer token); Codex CLI needs a custom model
// provider speaking the Responses API with its key in an environment variable.

export const KEY_PLACEHOLDER = "YOUR_SWITCHYARD_KEY";
export const CODEX_ENV_KEY = "SWITCHYARD_API_KEY";

function trimBase(baseUrl: string): string {
  return baseUrl.replace(/\/+$/, "");
}

export function claudeCodeCommand(baseUrl: string, key: string): string {
  return `ANTHROPIC_BASE_URL=${trimBase(baseUrl)} ANTHROPIC_AUTH_TOKEN=${key} claude`;
}

export function codexConfigToml(baseUrl: string): string {
  return [
    'model_provider = "switchyard"',
    "",
    "[model_providers.switchyard]",
    'name = "Switchyard"',
    `base_url = "${trimBase(baseUrl)}/v1"`,
    `env_key = "${CODEX_ENV_KEY}"`,
    'wire_api = "responses"',
    "",
  ].join("\n");
}

export function codexCommand(key: string): string {
  return `${CODEX_ENV_KEY}=${key} codex`;
}
