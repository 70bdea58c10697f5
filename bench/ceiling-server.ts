// The bench's ceiling: a plain Fastify server, in its own process, answering `GET /bench/ceiling` with a constant
// JSON body (the bytes of a real `GET /api/members` page, read from the file named by CEILING_BODY_FILE).
// It has the API's Fastify version and logger (pino at LOG_LEVEL) and nothing else: no hooks, no database, no
// schema. The body is sent as a ready-made string, so what it measures is Node + Fastify + HTTP alone.
// Keeping it out of src/ means the product has no bench-only route or setting.
import { readFileSync } from 'node:fs';
import Fastify from 'fastify';

const bodyFile = process.env.CEILING_BODY_FILE;
if (!bodyFile) throw new Error('CEILING_BODY_FILE is required');
const body = readFileSync(bodyFile, 'utf8');
const port = Number(process.env.PORT ?? 0);

const app = Fastify({ logger: { level: process.env.LOG_LEVEL ?? 'warn' } });
app.get('/bench/ceiling', async (_request, reply) => reply.type('application/json; charset=utf-8').send(body));

process.on('SIGTERM', () => {
  void app.close().finally(() => process.exit(0));
});

await app.listen({ port, host: '127.0.0.1' });
