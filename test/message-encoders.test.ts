/**
 * The lean path's own encoders against protobuf-es: for random messages of every message type the
 * service knows, plus a made-up type with every kind of field, the binary encoder must write the
 * bytes toBinary writes and the JSON encoder the UTF-8 of the text toJsonString writes, or step aside
 * (undefined) so toBinary / toJsonString answer.
 */
import {
  create,
  createFileRegistry,
  type DescField,
  type DescFile,
  type DescMessage,
  type JsonWriteOptions,
  ScalarType,
  toBinary,
  toJsonString,
} from "@bufbuild/protobuf";
import {
  FileDescriptorProtoSchema,
  file_google_protobuf_descriptor,
  file_google_protobuf_duration,
  file_google_protobuf_struct,
  file_google_protobuf_timestamp,
  file_google_protobuf_wrappers,
  FieldDescriptorProto_Label as Label,
  TimestampSchema,
  FieldDescriptorProto_Type as Type,
} from "@bufbuild/protobuf/wkt";
import { describe, expect, it } from "vitest";
import { file_agent_v1_agent } from "../gen/agent/v1/agent_pb.ts";
import { file_auth_v1_auth } from "../gen/auth/v1/auth_pb.ts";
import { file_connectrpc_conformance_v1_service } from "../gen/connectrpc/conformance/v1/service_pb.ts";
import { file_grpc_reflection_v1_reflection } from "../gen/grpc/reflection/v1/reflection_pb.ts";
import { file_health_v1_health } from "../gen/health/v1/health_pb.ts";
import {
  file_token_v1_token,
  GetTokenPricesResponseSchema,
  TokenPriceSchema,
} from "../gen/token/v1/token_pb.ts";
import { createBinaryEncoder } from "../src/lean/binary-encoder.ts";
import { deepFreeze } from "../src/lean/deep-freeze.ts";
import { createJsonEncoder } from "../src/lean/json-encoder.ts";

/** A proto3 file with every scalar, singular, optional, repeated (packed or not), oneof and map. */
const allKinds = createFileRegistry(
  create(FileDescriptorProtoSchema, {
    name: "kinds.proto",
    package: "kinds",
    syntax: "proto3",
    dependency: ["google/protobuf/timestamp.proto", "google/protobuf/wrappers.proto"],
    enumType: [
      {
        name: "Color",
        value: [
          { name: "COLOR_UNSPECIFIED", number: 0 },
          { name: "COLOR_RED", number: 1 },
          { name: "COLOR_BLUE", number: 7 },
        ],
      },
    ],
    messageType: [
      {
        name: "Kinds",
        field: withJsonNames([
          ...SCALARS().flatMap(([name, type], i) => [
            { name: `s_${name}`, number: 1 + i, type, label: Label.OPTIONAL },
            { name: `r_${name}`, number: 101 + i, type, label: Label.REPEATED },
            {
              name: `o_${name}`,
              number: 201 + i,
              type,
              label: Label.OPTIONAL,
              proto3Optional: true,
              oneofIndex: 1 + i,
            },
          ]),
          {
            name: "unpacked",
            number: 300,
            type: Type.INT32,
            label: Label.REPEATED,
            options: { packed: false },
          },
          field({
            name: "color",
            number: 301,
            type: Type.ENUM,
            typeName: ".kinds.Color",
            label: Label.OPTIONAL,
          }),
          field({
            name: "colors",
            number: 302,
            type: Type.ENUM,
            typeName: ".kinds.Color",
            label: Label.REPEATED,
          }),
          field({
            name: "child",
            number: 303,
            type: Type.MESSAGE,
            typeName: ".kinds.Kinds",
            label: Label.OPTIONAL,
          }),
          {
            name: "children",
            number: 304,
            type: Type.MESSAGE,
            typeName: ".kinds.Kinds",
            label: Label.REPEATED,
          },
          {
            name: "when",
            number: 305,
            type: Type.MESSAGE,
            typeName: ".google.protobuf.Timestamp",
            label: Label.OPTIONAL,
          },
          {
            name: "by_name",
            number: 306,
            type: Type.MESSAGE,
            typeName: ".kinds.Kinds.ByNameEntry",
            label: Label.REPEATED,
          },
          {
            name: "counts",
            number: 307,
            type: Type.MESSAGE,
            typeName: ".kinds.Kinds.CountsEntry",
            label: Label.REPEATED,
          },
          {
            name: "paints",
            number: 308,
            type: Type.MESSAGE,
            typeName: ".kinds.Kinds.PaintsEntry",
            label: Label.REPEATED,
          },
          field({ name: "pick_text", number: 309, type: Type.STRING, label: Label.OPTIONAL, oneofIndex: 0 }),
          {
            name: "pick_child",
            number: 310,
            type: Type.MESSAGE,
            typeName: ".kinds.Kinds",
            label: Label.OPTIONAL,
            oneofIndex: 0,
          },
          {
            name: "pick_wrapped",
            number: 311,
            type: Type.MESSAGE,
            typeName: ".google.protobuf.Int64Value",
            label: Label.OPTIONAL,
            oneofIndex: 0,
          },
          {
            name: "wrapped_list",
            number: 312,
            type: Type.MESSAGE,
            typeName: ".google.protobuf.StringValue",
            label: Label.REPEATED,
          },
        ]),
        oneofDecl: [{ name: "pick" }, ...SCALARS().map(([name]) => ({ name: `_o_${name}` }))],
        nestedType: [
          mapEntry("ByNameEntry", Type.MESSAGE, ".kinds.Kinds"),
          mapEntry("CountsEntry", Type.SINT64),
          mapEntry("PaintsEntry", Type.ENUM, ".kinds.Color"),
        ],
      },
    ],
  }),
  (name) =>
    ({
      "google/protobuf/timestamp.proto": file_google_protobuf_timestamp,
      "google/protobuf/wrappers.proto": file_google_protobuf_wrappers,
    })[name],
);

function SCALARS(): [string, Type][] {
  return [
    ["double", Type.DOUBLE],
    ["float", Type.FLOAT],
    ["int64", Type.INT64],
    ["uint64", Type.UINT64],
    ["int32", Type.INT32],
    ["fixed64", Type.FIXED64],
    ["fixed32", Type.FIXED32],
    ["bool", Type.BOOL],
    ["string", Type.STRING],
    ["bytes", Type.BYTES],
    ["uint32", Type.UINT32],
    ["sfixed32", Type.SFIXED32],
    ["sfixed64", Type.SFIXED64],
    ["sint32", Type.SINT32],
    ["sint64", Type.SINT64],
  ];
}

/** protoc's json_name: lowerCamelCase of the field name. */
function field(init: { name: string } & Record<string, unknown>) {
  return { ...init, jsonName: init.name.replace(/_([a-z0-9])/g, (_, c: string) => c.toUpperCase()) };
}

function withJsonNames(fields: ({ name: string } & Record<string, unknown>)[]) {
  return fields.map(field);
}

/** Where two encodings first differ, short enough to read in a failure. */
function firstDifference(mine: string, theirs: string): string | undefined {
  if (mine === theirs) return undefined;
  let i = 0;
  while (i < mine.length && mine[i] === theirs[i]) i++;
  return `at ${i}: ${JSON.stringify(mine.slice(Math.max(0, i - 40), i + 40))} vs ${JSON.stringify(theirs.slice(Math.max(0, i - 40), i + 40))}`;
}

function mapEntry(name: string, valueType: Type, typeName?: string) {
  return {
    name,
    field: [
      field({ name: "key", number: 1, type: Type.STRING, label: Label.OPTIONAL }),
      field({
        name: "value",
        number: 2,
        type: valueType,
        label: Label.OPTIONAL,
        ...(typeName ? { typeName } : {}),
      }),
    ],
    options: { mapEntry: true },
  };
}

const files: DescFile[] = [
  file_token_v1_token,
  file_agent_v1_agent,
  file_auth_v1_auth,
  file_health_v1_health,
  file_grpc_reflection_v1_reflection,
  file_connectrpc_conformance_v1_service,
  file_google_protobuf_descriptor,
  file_google_protobuf_timestamp,
  file_google_protobuf_duration,
  file_google_protobuf_struct,
  file_google_protobuf_wrappers,
  allKinds.getFile("kinds.proto") as DescFile,
];

function messagesOf(file: DescFile): DescMessage[] {
  const out: DescMessage[] = [];
  const visit = (m: DescMessage) => {
    out.push(m);
    m.nestedMessages.forEach(visit);
  };
  file.messages.forEach(visit);
  return out;
}

const types = files.flatMap(messagesOf);

/** A small deterministic generator (mulberry32), so a failure can be reproduced. */
function randomness(seed: number) {
  let a = seed;
  const next = () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const int = (n: number) => Math.floor(next() * n);
  const pick = <T>(items: readonly T[]): T => items[int(items.length)] as T;
  return { next, int, pick };
}
type Random = ReturnType<typeof randomness>;

const STRINGS = [
  "",
  "a",
  "SOL",
  "é",
  "日本語",
  "😀",
  "\ud800",
  '\u0000\n\t"\\/',
  "\u2028",
  "x".repeat(127),
  "y".repeat(128),
  "z".repeat(20000),
  "é".repeat(70),
];
const DOUBLES = [
  0,
  -0,
  1,
  -1,
  0.1,
  1e-7,
  1e21,
  123.456,
  -2.5e-300,
  Number.MAX_VALUE,
  Number.NaN,
  Number.POSITIVE_INFINITY,
  Number.NEGATIVE_INFINITY,
];
const INT32S = [0, 1, -1, 127, 128, 300, 16384, 2147483647, -2147483648, -129];
const UINT32S = [0, 1, 127, 128, 16383, 16384, 2 ** 21, 2 ** 28, 4294967295];
const INT64S = [
  0n,
  1n,
  -1n,
  127n,
  128n,
  2n ** 31n,
  2n ** 35n + 7n,
  9223372036854775807n,
  -9223372036854775808n,
  -300n,
];
const UINT64S = [0n, 1n, 128n, 2n ** 32n, 2n ** 56n + 3n, 18446744073709551615n];

function scalar(r: Random, type: ScalarType): unknown {
  switch (type) {
    case ScalarType.STRING:
      return r.pick(STRINGS);
    case ScalarType.BOOL:
      return r.next() < 0.5;
    case ScalarType.DOUBLE:
      return r.next() < 0.5 ? r.pick(DOUBLES) : (r.next() - 0.5) * 10 ** r.int(12);
    case ScalarType.FLOAT:
      return Math.fround(r.next() < 0.5 ? r.pick(DOUBLES) : (r.next() - 0.5) * 10 ** r.int(12));
    case ScalarType.INT32:
    case ScalarType.SINT32:
    case ScalarType.SFIXED32:
      return r.pick(INT32S);
    case ScalarType.UINT32:
    case ScalarType.FIXED32:
      return r.pick(UINT32S);
    case ScalarType.INT64:
    case ScalarType.SINT64:
    case ScalarType.SFIXED64:
      return r.pick(INT64S);
    case ScalarType.UINT64:
    case ScalarType.FIXED64:
      return r.pick(UINT64S);
    case ScalarType.BYTES:
      return Uint8Array.from({ length: r.pick([0, 1, 3, 200]) }, () => r.int(256));
  }
}

function value(r: Random, field: DescField, kind: "scalar" | "enum" | "message", depth: number): unknown {
  if (kind === "enum" && field.enum) return r.next() < 0.15 ? 99 : r.pick(field.enum.values).number;
  if (kind === "message" && field.message) return message(r, field.message, depth + 1);
  return scalar(r, field.scalar as ScalarType);
}

function message(r: Random, desc: DescMessage, depth = 0): Record<string, unknown> {
  if (desc.typeName === "google.protobuf.Timestamp" || desc.typeName === "google.protobuf.Duration") {
    return create(desc, {
      seconds: BigInt(r.int(2_000_000_000)),
      nanos: r.pick([0, 1000, 1_000_000, 123_456_789]),
    } as never) as never;
  }
  const init: Record<string, unknown> = {};
  const deep = depth > 2;
  for (const field of desc.fields) {
    if (r.next() < 0.3) continue;
    if (field.oneof) {
      if (init[field.oneof.localName] !== undefined || r.next() < 0.5) continue;
      if (deep && field.fieldKind === "message") continue;
      init[field.oneof.localName] = {
        case: field.localName,
        value: value(r, field, field.fieldKind as "scalar", depth),
      };
      continue;
    }
    switch (field.fieldKind) {
      case "list":
        if (deep && field.listKind === "message") continue;
        init[field.localName] = Array.from(
          { length: field.listKind === "message" ? r.int(3) : r.pick([0, 1, 2, 3, 40]) },
          () => value(r, field, field.listKind, depth),
        );
        break;
      case "map": {
        if (deep && field.mapKind === "message") continue;
        const record: Record<string, unknown> = {};
        for (const key of ["b", "10", "a", "2", ""].slice(0, r.int(6)))
          record[key] = value(r, field, field.mapKind, depth);
        init[field.localName] = record;
        break;
      }
      case "message":
        if (deep) continue;
        init[field.localName] = value(r, field, "message", depth);
        break;
      default:
        init[field.localName] = value(r, field, field.fieldKind, depth);
    }
  }
  return create(desc, init as never) as never;
}

const jsonOptionSets: Partial<JsonWriteOptions>[] = [
  { alwaysEmitImplicit: true },
  {},
  { useProtoFieldName: true, enumAsInteger: true },
];

describe("the lean path's message encoders", () => {
  it("cover the service's answers", () => {
    for (const file of [file_token_v1_token, file_auth_v1_auth, file_health_v1_health]) {
      for (const desc of messagesOf(file)) {
        expect(createBinaryEncoder(desc), desc.typeName).toBeDefined();
        expect(createJsonEncoder(desc, { alwaysEmitImplicit: true }), desc.typeName).toBeDefined();
      }
    }
    expect(createBinaryEncoder(allKinds.getMessage("kinds.Kinds") as DescMessage)).toBeDefined();
  });

  it.each(types.map((t) => [t.typeName, t] as const))("write what protobuf-es writes: %s", (_name, desc) => {
    const binary = createBinaryEncoder(desc);
    const json = jsonOptionSets.map((o) => [o, createJsonEncoder(desc, o)] as const);
    const r = randomness(desc.typeName.length * 7919);
    let encoded = 0;
    let steppedAside = 0;
    for (let i = 0; i < 60; i++) {
      const m = message(r, desc) as never;
      if (binary !== undefined) {
        const mine = binary(m);
        if (mine === undefined) steppedAside++;
        else {
          encoded++;
          const theirs = Buffer.from(toBinary(desc, m)).toString("hex");
          expect(firstDifference(Buffer.from(mine).toString("hex"), theirs), `binary ${i}`).toBeUndefined();
        }
      }
      for (const [options, encode] of json) {
        if (encode === undefined) continue;
        let expected: string | Error;
        try {
          expected = toJsonString(desc, m, options);
        } catch (e) {
          expected = e as Error;
        }
        const mine = encode(m);
        if (mine === undefined) steppedAside++;
        else {
          encoded++;
          expect(expected, `json ${i} ${JSON.stringify(options)}`).toBeTypeOf("string");
          expect(
            firstDifference(Buffer.from(mine).toString("utf8"), expected as string),
            `json ${i} ${JSON.stringify(options)}`,
          ).toBeUndefined();
        }
      }
    }
    // Stepping aside is for odd values; ordinary messages are the encoders' own work.
    if (binary !== undefined || json.some(([, e]) => e !== undefined)) {
      expect(steppedAside).toBeLessThan(Math.max(encoded, 1));
    }
  });

  it("step aside for what they leave to protobuf-es, whose answer then stands", () => {
    const desc = allKinds.getMessage("kinds.Kinds") as DescMessage;
    const binary = createBinaryEncoder(desc);
    const json = createJsonEncoder(desc);
    // A number where a string belongs: toBinary coerces it, toJsonString refuses it.
    const wrongType = create(desc, {}) as Record<string, unknown>;
    wrongType.sString = 5;
    expect(binary?.(wrongType)).toBeUndefined();
    expect(json?.(wrongType)).toBeUndefined();
    // Unknown fields are written by toBinary.
    const unknown = create(desc, {}) as Record<string, unknown>;
    unknown.$unknown = [{ no: 999, wireType: 0, data: new Uint8Array([1]) }];
    expect(binary?.(unknown)).toBeUndefined();
    // A message of another type.
    expect(binary?.(create(file_token_v1_token.messages[0] as DescMessage))).toBeUndefined();
  });

  it("write a deeply frozen entry's remembered bytes, and anything that can change anew", () => {
    const encode = createJsonEncoder(GetTokenPricesResponseSchema, { alwaysEmitImplicit: true });
    const entry = (mint: string) =>
      create(TokenPriceSchema, {
        mint,
        price: 1.5,
        asOf: create(TimestampSchema, { seconds: 1_700_000_000n }),
      });
    const frozen = deepFreeze(entry("frozen"));
    const open = entry("open");
    // Frozen on the outside only: its Timestamp can still change.
    const shallow = Object.freeze(entry("shallow"));
    const answer = create(GetTokenPricesResponseSchema, { success: true, data: [frozen, open, shallow] });
    const binary = createBinaryEncoder(GetTokenPricesResponseSchema);
    const text = () => Buffer.from(encode?.(answer) as Uint8Array).toString("utf8");
    const expected = () => toJsonString(GetTokenPricesResponseSchema, answer, { alwaysEmitImplicit: true });
    const bytes = () => Buffer.from(binary?.(answer) as Uint8Array).toString("hex");
    const expectedBytes = () => Buffer.from(toBinary(GetTokenPricesResponseSchema, answer)).toString("hex");
    for (let i = 0; i < 2; i++) {
      expect(text()).toBe(expected());
      expect(bytes()).toBe(expectedBytes());
    }
    open.price = 2.5;
    (shallow.asOf as { seconds: bigint }).seconds = 1_800_000_000n;
    expect(text()).toContain('"mint":"open","symbol":"","price":2.5');
    expect(text()).toBe(expected());
    expect(bytes()).toBe(expectedBytes());
  });

  it("write each Timestamp as its own, when one follows another that shares its seconds or nanos", () => {
    const encode = createJsonEncoder(TokenPriceSchema, { alwaysEmitImplicit: true });
    const at = (seconds: bigint, nanos: number) =>
      create(TokenPriceSchema, { mint: "m", asOf: create(TimestampSchema, { seconds, nanos }) });
    // Repeats, then one field changing at a time, then back: a remembered time must never stand in
    // for another.
    const times = [
      at(1_700_000_000n, 0),
      at(1_700_000_000n, 0),
      at(1_700_000_000n, 5_000_000),
      at(1_700_000_001n, 5_000_000),
      at(1_700_000_001n, 123_456_789),
      at(1_700_000_000n, 0),
    ];
    for (const [i, price] of times.entries()) {
      const mine = encode?.(price);
      expect(mine, `time ${i}`).toBeDefined();
      expect(Buffer.from(mine as Uint8Array).toString("utf8"), `time ${i}`).toBe(
        toJsonString(TokenPriceSchema, price, { alwaysEmitImplicit: true }),
      );
    }
    // Out of range: left to toJsonString, whose error stands; the remembered time is not written.
    const far = at(999_999_999_999n, 0);
    expect(encode?.(far)).toBeUndefined();
    expect(() => toJsonString(TokenPriceSchema, far)).toThrow(/must be from 0001-01-01/);
    expect(Buffer.from(encode?.(times[0] as never) as Uint8Array).toString("utf8")).toBe(
      toJsonString(TokenPriceSchema, times[0] as never, { alwaysEmitImplicit: true }),
    );
  });
});
