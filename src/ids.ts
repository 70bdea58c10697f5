import { v7 } from 'uuid';

/** Time-ordered uuid (v7) for every row the service creates. */
export const newId = (): string => v7();
