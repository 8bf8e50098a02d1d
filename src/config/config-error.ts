/** A bad configuration: its message names every offending variable. */
export class ConfigError extends Error {
  override readonly name = "ConfigError";
}
