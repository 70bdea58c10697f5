// Channel credentials at rest: AES-256-GCM with a key derived (HKDF-SHA256) from the service's secret and a random
// salt stored with each value. Format: `v1.<salt>.<iv>.<tag>.<ciphertext>`, each part base64url.
import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';

const INFO = 'channel-secrets';
const VERSION = 'v1';

function deriveKey(secret: string, salt: Buffer): Buffer {
  return Buffer.from(hkdfSync('sha256', secret, salt, INFO, 32));
}

/** Encrypts a JSON-serialisable value; a fresh salt and IV each time, so equal values never look alike. */
export function encryptJson(secret: string, value: unknown): string {
  const salt = randomBytes(16);
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', deriveKey(secret, salt), iv);
  const ciphertext = Buffer.concat([cipher.update(JSON.stringify(value), 'utf8'), cipher.final()]);
  const tag = cipher.getAuthTag();
  return [VERSION, salt, iv, tag, ciphertext].map((part) => (typeof part === 'string' ? part : part.toString('base64url'))).join('.');
}

/** Decrypts what `encryptJson` wrote with the same secret; throws on tampering or another secret. */
export function decryptJson<T>(secret: string, sealed: string): T {
  const [version, salt, iv, tag, ciphertext] = sealed.split('.');
  if (version !== VERSION || !salt || !iv || !tag || ciphertext === undefined) throw new Error('unknown secret format');
  const decipher = createDecipheriv('aes-256-gcm', deriveKey(secret, Buffer.from(salt, 'base64url')), Buffer.from(iv, 'base64url'));
  decipher.setAuthTag(Buffer.from(tag, 'base64url'));
  const plain = Buffer.concat([decipher.update(Buffer.from(ciphertext, 'base64url')), decipher.final()]);
  return JSON.parse(plain.toString('utf8')) as T;
}
