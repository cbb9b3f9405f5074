// Baseline server: a bare Fastify app whose every GET/POST route answers {"success":true}. Run as its own process.
import Fastify from 'fastify';

const app = Fastify({ logger: false });
app.route({ method: ['GET', 'POST'], url: '/*', handler: async () => ({ success: true }) });
const url = await app.listen({ host: '127.0.0.1', port: 0 });
console.log(`bare fastify listening at ${url} `);
process.on('SIGTERM', () => app.close().then(() => process.exit(0)));
