export * from './auth.js';
export * from './operations.js';
export * from './tenancy.js';
export * from './content.js';
export * from './inbox.js';
