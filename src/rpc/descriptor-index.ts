import { type DescFile, type DescService, toBinary } from "@bufbuild/protobuf";
import {
  type DescriptorProto,
  type EnumDescriptorProto,
  type FieldDescriptorProto,
  FileDescriptorProtoSchema,
} from "@bufbuild/protobuf/wkt";

/**
 * The descriptors a server reflects: the files declaring its services and every file they import,
 * looked up by file name, by fully-qualified symbol, and by extension. Built once at startup from
 * the generated code's embedded descriptors, so answering a reflection request is map lookups;
 * each file is serialized the first time it is asked for and the bytes reused.
 */
export interface DescriptorIndex {
  /** Fully-qualified names of the served services. */
  readonly serviceNames: readonly string[];
  /** By path, e.g. "token/v1/token.proto". */
  fileByName(name: string): DescFile | undefined;
  /**
   * The file declaring `symbol`: a service, method, message, enum, extension, field, oneof or
   * enum value, nested ones included (e.g. "token.v1.TokenService.GetTokenPrices").
   */
  fileContainingSymbol(symbol: string): DescFile | undefined;
  /** The file declaring extension `number` of message `typeName`. */
  fileContainingExtension(typeName: string, number: number): DescFile | undefined;
  /** The extension numbers known for message `typeName`; undefined when the message is unknown. */
  extensionNumbersOf(typeName: string): number[] | undefined;
  /**
   * `file` serialized as a FileDescriptorProto, then those of its transitive dependencies not in
   * `alreadySent` (which this updates), so a stream sends each dependency once.
   */
  serialize(file: DescFile, alreadySent: Set<string>): Uint8Array[];
}

export function createDescriptorIndex(options: {
  services: readonly DescService[];
  /** More files to describe, e.g. the error detail messages callers meet in errors. */
  files?: readonly DescFile[];
}): DescriptorIndex {
  const files = new Map<string, DescFile>();
  const symbols = new Map<string, DescFile>();
  const extensions = new Map<string, DescFile>();
  const extensionNumbers = new Map<string, number[]>();
  const messages = new Set<string>();

  /** Indexes a message's symbols and its nested declarations, map entries included. */
  const addMessage = (file: DescFile, scope: string, message: DescriptorProto) => {
    const name = `${scope}${message.name}`;
    symbols.set(name, file);
    messages.add(name);
    for (const field of message.field) symbols.set(`${name}.${field.name}`, file);
    for (const oneof of message.oneofDecl) symbols.set(`${name}.${oneof.name}`, file);
    for (const nested of message.nestedType) addMessage(file, `${name}.`, nested);
    for (const nested of message.enumType) addEnum(file, `${name}.`, nested);
    for (const extension of message.extension) addExtension(file, `${name}.`, extension);
  };
  const addEnum = (file: DescFile, scope: string, enumType: EnumDescriptorProto) => {
    symbols.set(`${scope}${enumType.name}`, file);
    // Enum values are scoped like C++ enumerators: siblings of the enum, not its children.
    for (const value of enumType.value) symbols.set(`${scope}${value.name}`, file);
  };
  const addExtension = (file: DescFile, scope: string, extension: FieldDescriptorProto) => {
    symbols.set(`${scope}${extension.name}`, file);
    const extendee = extension.extendee.replace(/^\./, "");
    extensions.set(`${extendee}#${extension.number}`, file);
    extensionNumbers.set(extendee, [...(extensionNumbers.get(extendee) ?? []), extension.number]);
  };
  // Walks the descriptor protos rather than protobuf-es' descriptors, which leave out map entries.
  const add = (file: DescFile) => {
    if (files.has(file.proto.name)) return;
    files.set(file.proto.name, file);
    for (const dependency of file.dependencies) add(dependency);
    const proto = file.proto;
    const scope = proto.package === "" ? "" : `${proto.package}.`;
    for (const message of proto.messageType) addMessage(file, scope, message);
    for (const enumType of proto.enumType) addEnum(file, scope, enumType);
    for (const extension of proto.extension) addExtension(file, scope, extension);
    for (const service of proto.service) {
      symbols.set(`${scope}${service.name}`, file);
      for (const method of service.method) symbols.set(`${scope}${service.name}.${method.name}`, file);
    }
  };
  for (const service of options.services) add(service.file);
  for (const file of options.files ?? []) add(file);

  const bytes = new Map<string, Uint8Array>();
  const serialized = (file: DescFile): Uint8Array => {
    let b = bytes.get(file.proto.name);
    if (b === undefined) {
      b = toBinary(FileDescriptorProtoSchema, file.proto);
      bytes.set(file.proto.name, b);
    }
    return b;
  };

  return {
    serviceNames: options.services.map((s) => s.typeName),
    fileByName: (name) => files.get(name),
    fileContainingSymbol: (symbol) => symbols.get(symbol.replace(/^\./, "")),
    fileContainingExtension: (typeName, number) => extensions.get(`${typeName.replace(/^\./, "")}#${number}`),
    extensionNumbersOf(typeName) {
      const name = typeName.replace(/^\./, "");
      return messages.has(name) ? [...(extensionNumbers.get(name) ?? [])] : undefined;
    },
    serialize(file, alreadySent) {
      // The requested file always goes, even if sent before: the client asked for it by name.
      const out = [serialized(file)];
      alreadySent.add(file.proto.name);
      const visit = (f: DescFile) => {
        for (const dependency of f.dependencies) {
          if (alreadySent.has(dependency.proto.name)) continue;
          alreadySent.add(dependency.proto.name);
          visit(dependency);
          out.push(serialized(dependency));
        }
      };
      visit(file);
      return out;
    },
  };
}
