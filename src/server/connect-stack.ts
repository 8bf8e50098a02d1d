/**
 * connect-node's handler for every service, with what the server needs to know of its routes:
 * which paths stream, which methods each procedure takes, every implementation (for the lean
 * unary path), and the REST routes the contract's google.api.http rules map onto the same handlers.
 */
import type { Registry as MessageRegistry } from "@bufbuild/protobuf";
import {
  type ConnectRouter,
  createServiceImplSpec,
  type Interceptor,
  type ServiceImplSpec,
} from "@connectrpc/connect";
import { connectNodeAdapter } from "@connectrpc/connect-node";
import type { Config } from "../config.ts";
import type { RequestHandler } from "../http/dual-protocol-server.ts";
import { answerUnknownRoute } from "../http/unknown-route.ts";
import { createRestHandler } from "../rest/rest-handler.ts";
import { callContextValues } from "../rpc/client-address.ts";
import { withDecodeErrorsAsInvalidArgument } from "../rpc/decode-errors.ts";

type Handler = (...args: Parameters<RequestHandler>) => boolean;

export interface ConnectStackOptions {
  readonly config: Config;
  /** The service's own routes. */
  readonly routes: (router: ConnectRouter) => void;
  /** Services served beside them (see BuildOptions.extraServices). */
  readonly extraRoutes?: ((router: ConnectRouter) => void) | undefined;
  readonly interceptors: Interceptor[];
  readonly jsonOptions: {
    readonly alwaysEmitImplicit: boolean;
    readonly registry: MessageRegistry | undefined;
  };
  /** Tried in turn after REST on a path no procedure serves; the first to answer it wins. */
  readonly fallbacks: readonly Handler[];
  /** A request turned away before any service saw it, by reason. */
  readonly rejected: (reason: string) => void;
}

export interface ConnectStack {
  readonly connect: ReturnType<typeof connectNodeAdapter>;
  /** Every service implementation, as the router holds it, for the lean unary path. */
  readonly services: ServiceImplSpec[];
  /** Paths of RPCs whose request is a stream: REQUEST_TIMEOUT_MS does not cut them off. */
  readonly streamingPaths: ReadonlySet<string>;
  /** Paths of RPCs whose answer is a stream: connect-node's writes of them get a deadline. */
  readonly serverStreamingPaths: ReadonlySet<string>;
  /** Each Connect procedure path and the HTTP methods it takes (POST; GET too for side-effect-free ones). */
  readonly procedureMethods: ReadonlyMap<string, readonly string[]>;
}

export function createConnectStack(options: ConnectStackOptions): ConnectStack {
  const { config, routes, interceptors, jsonOptions, rejected } = options;
  const streamingPaths = new Set<string>();
  const serverStreamingPaths = new Set<string>();
  const procedureMethods = new Map<string, readonly string[]>();
  /** REST paths from the contract's google.api.http rules, served by the same Connect handlers. */
  let rest: ReturnType<typeof createRestHandler> = () => false;
  /** Every service implementation, as the router holds it, for the lean unary path. */
  const services: ServiceImplSpec[] = [];
  const connect = connectNodeAdapter({
    routes(router) {
      const recording: ConnectRouter = {
        handlers: router.handlers,
        service(service, impl, serviceOptions) {
          services.push(createServiceImplSpec(service, impl));
          return router.service(service, impl, serviceOptions);
        },
        rpc(method, impl, rpcOptions) {
          services.push({
            service: method.parent,
            methods: { [method.localName]: { kind: method.methodKind, method, impl } },
          } as ServiceImplSpec);
          return router.rpc(method, impl, rpcOptions);
        },
      };
      routes(recording);
      options.extraRoutes?.(recording);
      router.handlers.forEach((handler, i) => {
        router.handlers[i] = withDecodeErrorsAsInvalidArgument(handler, rejected);
      });
      for (const handler of router.handlers) {
        const kind = handler.method.methodKind;
        if (kind === "client_streaming" || kind === "bidi_streaming") streamingPaths.add(handler.requestPath);
        if (kind === "server_streaming") serverStreamingPaths.add(handler.requestPath);
        procedureMethods.set(handler.requestPath, handler.allowedMethods);
      }
      rest = createRestHandler({
        handlers: router.handlers,
        maxRequestBytes: config.maxRequestBytes,
        streamWriteTimeoutMs: config.streams.writeTimeoutMs,
        onRejected: rejected,
      });
    },
    readMaxBytes: config.maxRequestBytes,
    jsonOptions,
    interceptors,
    contextValues: (req) => callContextValues(req.socket.remoteAddress),
    fallback(req, res) {
      if (rest(req, res) || options.fallbacks.some((answer) => answer(req, res))) return;
      rejected("unknown_route");
      answerUnknownRoute(req, res);
    },
  });
  return { connect, services, streamingPaths, serverStreamingPaths, procedureMethods };
}
