import { z } from 'zod';
import { paginated, pageQuery } from '../../http/pagination.js';

const name = z.string().max(100).trim().min(1).describe('1 to 100 characters, not blank; stored trimmed');
const graphId = (what: string) =>
  z
    .string()
    .trim()
    .regex(/^[\w.-]{1,64}$/, `must be the ${what} Meta shows (letters, digits, '.', '_', '-')`)
    .describe(`The ${what} as Meta shows it`);

const accessToken = z.string().min(1).max(4096).describe('A system-user or page access token');
const appSecret = z.string().min(1).max(256).describe("The Meta app's secret: webhook signatures are checked with it");
const verifyToken = z.string().min(1).max(256).describe('The token Meta echoes when the webhook subscription is verified');

/** Credentials of the Meta channels, all three required on create; stored encrypted and never returned. */
export const metaSecrets = z.strictObject({ accessToken, appSecret, verifyToken });
export type MetaSecrets = z.infer<typeof metaSecrets>;
export const SECRET_NAMES = ['accessToken', 'appSecret', 'verifyToken'] as const;

const httpOrigin = z
  .url({ protocol: /^https?$/, message: 'must be an http(s) origin such as https://shop.example.com' })
  .refine((value) => {
    const url = new URL(value);
    return (url.pathname === '/' || url.pathname === '') && !url.search && !url.hash && !url.username && !url.password;
  }, 'must be an origin: scheme, host and optional port, no path')
  .transform((value) => new URL(value).origin);

export const whatsappConfig = z.strictObject({
  phoneNumberId: graphId('phone number id'),
  businessAccountId: graphId('WhatsApp business account id'),
});
export const messengerConfig = z.strictObject({ pageId: graphId('Facebook page id') });
export const instagramConfig = z.strictObject({ accountId: graphId('Instagram account id') });
export const livechatConfig = z.strictObject({
  allowedOrigins: z.array(httpOrigin).min(1).max(50).describe('Origins the widget may be embedded on'),
  greeting: z.string().max(1000).optional().describe('Shown to a visitor when a chat opens'),
});

/** Each type's full config, for validating a PATCH merged onto the stored one. */
export const CONFIG_SCHEMAS = {
  whatsapp: whatsappConfig,
  messenger: messengerConfig,
  instagram: instagramConfig,
  livechat: livechatConfig,
} as const;

export const createChannelBody = z.discriminatedUnion('type', [
  z.strictObject({ type: z.literal('whatsapp'), name, config: whatsappConfig, secrets: metaSecrets }),
  z.strictObject({ type: z.literal('messenger'), name, config: messengerConfig, secrets: metaSecrets }),
  z.strictObject({ type: z.literal('instagram'), name, config: instagramConfig, secrets: metaSecrets }),
  z.strictObject({ type: z.literal('livechat'), name, config: livechatConfig }),
]);
export type CreateChannelInput = z.infer<typeof createChannelBody>;

export const updateChannelBody = z
  .strictObject({
    name: name.optional(),
    config: z
      .record(z.string(), z.unknown())
      .optional()
      .describe("Fields to change, merged onto the current config and checked against the channel type's config"),
    secrets: z
      .strictObject({ accessToken: accessToken.optional(), appSecret: appSecret.optional(), verifyToken: verifyToken.optional() })
      .optional()
      .describe('Credentials to replace (Meta channels only); the others are kept'),
  })
  .refine((value) => Object.values(value).some((field) => field !== undefined), {
    message: 'At least one field is required',
  });
export type UpdateChannelInput = z.infer<typeof updateChannelBody>;

const configured = z.object({ configured: z.literal(true) });

export const channel = z
  .object({
    id: z.uuid(),
    workspaceId: z.uuid(),
    type: z.enum(['whatsapp', 'messenger', 'instagram', 'livechat']),
    name: z.string(),
    config: z.record(z.string(), z.unknown()).describe("The type's settings (ids, allowed origins, greeting)"),
    secrets: z
      .object({ accessToken: configured.optional(), appSecret: configured.optional(), verifyToken: configured.optional() })
      .describe('Which credentials are stored (`{configured: true}`); their values are never returned'),
    webhookUrl: z.string().optional().describe('The callback URL to give Meta (absent for live chat)'),
    createdAt: z.string(),
    updatedAt: z.string(),
  })
  .meta({ id: 'Channel' });
export type ChannelRecord = z.infer<typeof channel>;

export const channelPage = paginated(channel);
export const channelListQuery = pageQuery;
export const channelParams = z.object({ id: z.uuid() });
