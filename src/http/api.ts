import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { FastifyBaseLogger, FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';

/** The Fastify instance every module registers on: zod schemas give validation, types and OpenAPI. */
export type Api = FastifyInstance<Server, IncomingMessage, ServerResponse, FastifyBaseLogger, ZodTypeProvider>;

export const iso = (date: Date | string): string => (typeof date === 'string' ? new Date(date) : date).toISOString();

/** Route `config` for reads open to every role of the workspace, and for writes that need Admin or Org Owner. */
export const anyRole = { access: 'workspace' as const };
export const adminOnly = { access: 'workspace' as const, minRole: 'admin' as const };
/** Route `config` for writes open to Agents and above (Viewers only read). */
export const agentOrAbove = { access: 'workspace' as const, minRole: 'agent' as const };
