/**
 * The market the trigger order tests trade on: JUP against USDC on one pool of the embedded chain
 * (0.5 USDC a JUP), orders of 20 JUP, and Jupiter-shaped price entries the tests move.
 */
import type { Address } from "@solana/kit";
import { findAssociatedTokenPda, TOKEN_PROGRAM_ADDRESS } from "@solana-program/token";
import { loadCatalog } from "../../src/token/catalog.ts";
import { DOC_PRICES, type FakePrice } from "./fake-jupiter.ts";

const catalog = loadCatalog().tokens;
export const mintOf = (symbol: string) => catalog.find((t) => t.symbol === symbol)?.mint as Address;
export const USDC = mintOf("USDC");
export const JUP = mintOf("JUP");
/** 1,000,000 USDC and 2,000,000 JUP: 0.5 USDC per JUP. */
export const RESERVE_USDC = 1_000_000_000_000n;
export const RESERVE_JUP = 2_000_000_000_000n;
/** 20 JUP an order: 10 USD at 0.5, above TRIGGER_MIN_USD. */
export const AMOUNT = 20;
export const AMOUNT_UNITS = 20_000_000n;

/** A Price API v3 entry at `usdPrice`, shaped as Jupiter documents it. */
export const priced = (usdPrice: number): FakePrice => ({
  ...(DOC_PRICES.EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v as FakePrice),
  usdPrice,
});

/** The wallet's associated token account of `mint`. */
export const tokenAccountOf = async (owner: Address, mint: Address): Promise<Address> =>
  (await findAssociatedTokenPda({ owner, mint, tokenProgram: TOKEN_PROGRAM_ADDRESS }))[0];
