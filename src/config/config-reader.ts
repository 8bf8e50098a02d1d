/** How each area reads its variables: the value or its default, checked, with each problem collected. */
import { CONFIG_VARIABLES } from "./config-variables.ts";

export type ConfigName = keyof typeof CONFIG_VARIABLES;
export type Env = Readonly<Record<string, string | undefined>>;

export interface ConfigReader {
  /** Every problem found so far, in the order the variables were read. */
  readonly problems: string[];
  /** The variable's trimmed value, or its default when unset or empty. */
  read(name: ConfigName): string;
  /** An integer from `min` to `max`. */
  int(name: ConfigName, min: number, max: number): number;
  /** true or false (also 1 or 0). */
  bool(name: ConfigName): boolean;
  /** A number from 0 to 1. */
  ratio(name: ConfigName): number;
  /** A whole number of hours from 1 to `max`, in milliseconds. */
  hours(name: ConfigName, max: number): number;
}

export function createConfigReader(env: Env): ConfigReader {
  const problems: string[] = [];
  const read = (name: ConfigName): string => {
    const value = env[name]?.trim();
    return value === undefined || value === "" ? CONFIG_VARIABLES[name] : value;
  };
  const int = (name: ConfigName, min: number, max: number): number => {
    const text = read(name);
    const value = Number(text);
    if (!/^\d+$/.test(text) || value < min || value > max) {
      problems.push(`${name} must be an integer from ${min} to ${max} (got "${text}")`);
    }
    return value;
  };

  const bool = (name: ConfigName): boolean => {
    const text = read(name).toLowerCase();
    if (!["true", "false", "1", "0"].includes(text))
      problems.push(`${name} must be true or false (got "${text}")`);
    return text === "true" || text === "1";
  };
  const ratio = (name: ConfigName): number => {
    const text = read(name);
    const value = Number(text);
    if (!/^(0|1|0?\.\d+|1\.0*)$/.test(text))
      problems.push(`${name} must be a number from 0 to 1 (got "${text}")`);
    return value;
  };
  const hours = (name: ConfigName, max: number) => int(name, 1, max) * 3_600_000;
  return { problems, read, int, bool, ratio, hours };
}
