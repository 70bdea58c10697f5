import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { hasZodFastifySchemaValidationErrors } from 'fastify-type-provider-zod';
import { z } from 'zod';

/** The closed set of failures the API reports, and the one place they become HTTP statuses. */
const STATUS = {
  validation: 400,
  unauthorized: 401,
  forbidden: 403,
  not_found: 404,
  conflict: 409,
  gone: 410,
  payload_too_large: 413,
  unsupported_media_type: 415,
  unprocessable: 422,
  too_many_requests: 429,
  internal: 500,
  unavailable: 503,
} as const;

export type ErrorCode = keyof typeof STATUS;
export type ErrorDetail = { path: string; message: string };

export class AppError extends Error {
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly details?: ErrorDetail[],
    /** Extra top-level fields a specific error documents, e.g. `existingId` on a duplicate. */
    readonly extra?: Record<string, unknown>,
    /** Seconds, sent as Retry-After on 429. */
    readonly retryAfter?: number,
  ) {
    super(message);
  }
  get status(): number {
    return STATUS[this.code];
  }
}

export const TOO_MANY_REQUESTS = 'Too many requests, please try again later';

export const errors = {
  validation: (details: ErrorDetail[], message = 'Validation failed') => new AppError('validation', message, details),
  unauthorized: () => new AppError('unauthorized', 'Unauthorized'),
  forbidden: () => new AppError('forbidden', 'Forbidden'),
  notFound: () => new AppError('not_found', 'Not found'),
  conflict: (message: string, extra?: Record<string, unknown>) => new AppError('conflict', message, undefined, extra),
  unprocessable: (message: string) => new AppError('unprocessable', message),
  tooManyRequests: (retryAfterSeconds: number) =>
    new AppError('too_many_requests', TOO_MANY_REQUESTS, undefined, undefined, Math.max(1, retryAfterSeconds)),
};

/** Response schemas for the OpenAPI document. */
export const errorBody = z.object({ error: z.string() }).meta({ id: 'Error' });
export const validationErrorBody = z
  .object({ error: z.string(), details: z.array(z.object({ path: z.string(), message: z.string() })) })
  .meta({ id: 'ValidationError' });

function toPath(instancePath: string): string {
  return instancePath.replace(/^\//, '').split('/').filter(Boolean).join('.');
}

function validationDetails(error: FastifyError): ErrorDetail[] {
  if (!hasZodFastifySchemaValidationErrors(error)) {
    return (error.validation ?? []).map((v) => ({ path: toPath(v.instancePath), message: v.message ?? 'Invalid' }));
  }
  return error.validation.flatMap((issue) => {
    const base = toPath(issue.instancePath);
    if (issue.keyword === 'unrecognized_keys' && Array.isArray(issue.params.keys)) {
      return (issue.params.keys as string[]).map((key) => ({
        path: base ? `${base}.${key}` : key,
        message: 'Unknown property',
      }));
    }
    return [{ path: base, message: issue.message ?? 'Invalid' }];
  });
}

const FRAMEWORK_ERRORS: Record<string, (error: FastifyError) => AppError> = {
  FST_ERR_CTP_INVALID_MEDIA_TYPE: () =>
    new AppError('unsupported_media_type', 'Unsupported Media Type: send the body as application/json'),
  FST_ERR_CTP_BODY_TOO_LARGE: () => new AppError('payload_too_large', 'Request body is larger than 1 MiB'),
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: () =>
    errors.validation([{ path: '', message: 'Content-Length does not match the body' }], 'Invalid request body'),
  FST_ERR_CTP_EMPTY_JSON_BODY: () =>
    errors.validation([{ path: '', message: 'Body cannot be empty when content-type is application/json' }], 'Invalid request body'),
  FST_ERR_CTP_INVALID_JSON_BODY: () => errors.validation([{ path: '', message: 'Body is not valid JSON' }], 'Invalid request body'),
};

/** Turns anything thrown into one of the two body shapes; 500s are logged with their stack and stay opaque. */
export function toAppError(error: unknown): AppError {
  if (error instanceof AppError) return error;
  const fastifyError = error as FastifyError;
  if (fastifyError?.validation) return errors.validation(validationDetails(fastifyError));
  const mapped = fastifyError?.code ? FRAMEWORK_ERRORS[fastifyError.code] : undefined;
  if (mapped) return mapped(fastifyError);
  if (fastifyError instanceof SyntaxError && fastifyError.statusCode === 400) {
    return errors.validation([{ path: '', message: 'Body is not valid JSON' }], 'Invalid request body');
  }
  const status = fastifyError?.statusCode;
  if (status === 401) return errors.unauthorized();
  if (status === 403) return errors.forbidden();
  if (status === 404) return errors.notFound();
  if (status === 409) return errors.conflict(fastifyError.message);
  if (status === 422) return errors.unprocessable(fastifyError.message);
  if (status === 413) return FRAMEWORK_ERRORS.FST_ERR_CTP_BODY_TOO_LARGE!(fastifyError);
  if (status === 415) return FRAMEWORK_ERRORS.FST_ERR_CTP_INVALID_MEDIA_TYPE!(fastifyError);
  if (status === 400) return errors.validation([{ path: '', message: fastifyError.message }], 'Bad request');
  return new AppError('internal', 'Internal server error');
}

export function sendError(request: FastifyRequest, reply: FastifyReply, error: unknown): FastifyReply {
  const appError = toAppError(error);
  if (appError.code === 'internal') request.log.error({ err: error }, 'request failed');
  if (appError.retryAfter !== undefined) reply.header('Retry-After', String(appError.retryAfter));
  const body: Record<string, unknown> = { error: appError.message };
  if (appError.code === 'validation') body.details = appError.details ?? [];
  Object.assign(body, appError.extra);
  return reply.code(appError.status).send(body);
}
