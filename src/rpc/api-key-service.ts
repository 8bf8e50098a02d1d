import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { ServiceImpl } from "@connectrpc/connect";
import {
  ApiKeyInfoSchema,
  type ApiKeyService,
  CreateApiKeyResponseSchema,
  ListApiKeysResponseSchema,
  RevokeApiKeyResponseSchema,
} from "../../gen/auth/v1/auth_pb.ts";
import type { ApiKeys } from "../auth/api-keys.ts";

/** ApiKeyService over the API key rules; the auth interceptor admits admin keys only. */
export function createApiKeyService(options: { keys: ApiKeys }): ServiceImpl<typeof ApiKeyService> {
  const { keys } = options;
  return {
    async createApiKey(req) {
      const { record, key } = await keys.create({
        owner: req.owner,
        scopes: req.scopes,
        maxAgents: req.maxAgents,
        maxPending: req.maxPendingAgents,
      });
      return create(CreateApiKeyResponseSchema, {
        success: true,
        data: {
          keyId: record.keyId,
          key,
          owner: record.owner,
          scopes: [...record.scopes],
          createdAt: timestampFromDate(record.createdAt),
          maxAgents: record.maxAgents ?? 0,
          maxPendingAgents: record.maxPending ?? 0,
        },
      });
    },

    async listApiKeys(req) {
      const page = await keys.list({ owner: req.owner, limit: req.limit, offset: req.offset });
      return create(ListApiKeysResponseSchema, {
        success: true,
        data: {
          keys: page.keys.map((k) =>
            create(ApiKeyInfoSchema, {
              keyId: k.keyId,
              owner: k.owner,
              scopes: [...k.scopes],
              createdAt: timestampFromDate(k.createdAt),
              ...(k.revokedAt === undefined ? {} : { revokedAt: timestampFromDate(k.revokedAt) }),
              maxAgents: k.maxAgents ?? 0,
              maxPendingAgents: k.maxPending ?? 0,
            }),
          ),
          total: page.total,
        },
      });
    },

    async revokeApiKey(req) {
      return create(RevokeApiKeyResponseSchema, {
        success: true,
        data: { revoked: await keys.revoke(req.keyId) },
      });
    },
  };
}
