/** Checks of the agent requests' plain fields, each adding the field's rule to what it refused. */
import { alternatives, type FieldViolation, InvalidArgumentError, quote } from "../domain/errors.ts";

/** Longest agent id accepted; ids are 22 characters, so anything far longer is not one. */
export const MAX_AGENT_ID_LENGTH = 128;

/** `value` when it is one of `allowed`; else undefined, with the field's violation added (when required or given). */
export function oneOf<T extends string>(
  value: string,
  allowed: readonly T[],
  field: string,
  violations: FieldViolation[],
  required: boolean,
): T | undefined {
  if (value === "") {
    if (required)
      violations.push({ field, description: `is required and must be one of ${alternatives(allowed)}` });
    return undefined;
  }
  if ((allowed as readonly string[]).includes(value)) return value as T;
  violations.push({ field, description: `must be one of ${alternatives(allowed)} but is ${quote(value)}` });
  return undefined;
}

export function requireAgentId(agentId: string): void {
  if (agentId === "") throw InvalidArgumentError.field("agentId", "is required");
  if (agentId.length > MAX_AGENT_ID_LENGTH) {
    throw InvalidArgumentError.field("agentId", `must be at most ${MAX_AGENT_ID_LENGTH} characters`);
  }
}
