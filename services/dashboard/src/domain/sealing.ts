import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';

/**
 * Secrets the dashboard must read back (the TOTP seeds of the second factor) are stored sealed:
 * AES-256-GCM under a key from configuration, with a random 96-bit nonce per value and the member's id
 * as additional authenticated data, so a sealed value copied onto another member's row does not open.
 * Each sealed value is stored beside the id of the key that sealed it, so keys can be rotated: the ring
 * holds every key still needed to open old values and seals new ones under the active key.
 */
const NONCE_BYTES = 12;
const TAG_BYTES = 16;
const ID = /^[A-Za-z0-9_.-]{1,64}$/;

/** A sealed value and the id of the key that sealed it, as stored. */
export interface Sealed {
  keyId: string;
  sealed: Buffer;
}

/** A sealed value could not be opened: its key is not configured, or the key or the value is wrong. */
export class Unopenable extends Error {
  constructor(readonly keyId: string) {
    super(`a sealed secret under key ${keyId} cannot be opened`);
    this.name = 'Unopenable';
  }
}

export class SealingKeys {
  private constructor(
    private readonly keys: ReadonlyMap<string, Buffer>,
    readonly activeId: string,
  ) {}

  /**
   * `id1:base64,id2:base64` (each key 32 bytes) and the id of the active one. Errors name the variable
   * and the key id, never a key.
   */
  static parse(spec: string, activeId: string, name = 'DNC_TOTP_KEYS'): SealingKeys {
    const keys = new Map<string, Buffer>();
    for (const part of spec.split(',')) {
      const at = part.indexOf(':');
      const id = part.slice(0, at).trim();
      if (at <= 0 || !ID.test(id)) throw new Error(`${name}: each entry must be id:base64`);
      const key = Buffer.from(part.slice(at + 1).trim(), 'base64');
      if (key.length !== 32) throw new Error(`${name}: key ${id} must be 32 bytes (base64)`);
      if (keys.has(id)) throw new Error(`${name}: key id ${id} appears twice`);
      keys.set(id, key);
    }
    if (!keys.has(activeId)) throw new Error(`${name}: the active key id is not one of its ids`);
    return new SealingKeys(keys, activeId);
  }

  has(keyId: string): boolean {
    return this.keys.has(keyId);
  }

  /** Seal under the active key, bound to `context` (the member id). */
  seal(plain: string, context: string): Sealed {
    const nonce = randomBytes(NONCE_BYTES);
    const cipher = createCipheriv('aes-256-gcm', this.keys.get(this.activeId)!, nonce);
    cipher.setAAD(aad(context));
    const body = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
    return { keyId: this.activeId, sealed: Buffer.concat([nonce, body, cipher.getAuthTag()]) };
  }

  /** Open a sealed value bound to `context`; Unopenable (never the cause's details) otherwise. */
  open(value: Sealed, context: string): string {
    const key = this.keys.get(value.keyId);
    const { sealed } = value;
    if (!key || sealed.length < NONCE_BYTES + TAG_BYTES) throw new Unopenable(value.keyId);
    try {
      const decipher = createDecipheriv('aes-256-gcm', key, sealed.subarray(0, NONCE_BYTES));
      decipher.setAAD(aad(context));
      decipher.setAuthTag(sealed.subarray(sealed.length - TAG_BYTES));
      const plain = Buffer.concat([
        decipher.update(sealed.subarray(NONCE_BYTES, sealed.length - TAG_BYTES)),
        decipher.final(),
      ]);
      return plain.toString('utf8');
    } catch {
      throw new Unopenable(value.keyId);
    }
  }
}

function aad(context: string): Buffer {
  return Buffer.from(`dnc.dashboard.v1|totp|${context}`, 'utf8');
}
