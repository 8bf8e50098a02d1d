import { isAddress } from "@solana/addresses";
import {
  address,
  canonical,
  type KindConfigRules,
  positive,
  schedule,
  symbol,
} from "../../agent/agent-config.ts";

/** A transfer's settings: who pays whom how much of which token, and when. */
export const TRANSFER_SETTINGS: KindConfigRules = {
  settings: { source: address, destination: address, amount: positive, token: symbol, schedule },
  optional: new Set(),
  async crossField({ source, destination }) {
    return typeof destination === "string" && isAddress(destination) && source === destination
      ? [{ field: "config.destination", description: "must differ from config.source" }]
      : [];
  },
  tokenFields: ["token"],
  refusedExtensions: {},
  amountToken: (config, { lookupSymbol }) => canonical(config.token, lookupSymbol),
  async normalise(config, { lookupSymbol }) {
    return { ...config, token: (await lookupSymbol(config.token as string)) as string };
  },
};
