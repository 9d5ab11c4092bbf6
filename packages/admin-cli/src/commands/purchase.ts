import { admissionv1 } from '@dnc/proto';
import { type Command, intFlag, requireFlag } from '../cli.js';
import { admissionAdmin } from './org.js';

const CALL = { timeoutMs: 10_000 };

const STATUS: Record<number, string> = {
  [admissionv1.PurchaseStatus.PENDING_PAYMENT]: 'pending_payment',
  [admissionv1.PurchaseStatus.ACTIVE]: 'active',
  [admissionv1.PurchaseStatus.LAPSED]: 'lapsed',
};

function shown(p: admissionv1.Purchase | undefined) {
  if (!p) return null;
  return {
    purchase_id: p.purchaseId,
    org_id: p.orgId,
    country: p.country,
    status: STATUS[p.status] ?? 'unknown',
    activated: p.activated,
    monthly_quota: Number(p.monthlyQuota),
  };
}

function step(name: 'pay' | 'activate' | 'lapse', usage: string): Command {
  return {
    name: `purchase ${name}`,
    usage,
    options: { purchase: { type: 'string' } },
    async run(flags, env) {
      const admin = admissionAdmin(env);
      const purchaseId = requireFlag(flags, 'purchase');
      const r =
        name === 'pay'
          ? await admin.payPurchase({ purchaseId }, CALL)
          : name === 'activate'
            ? await admin.activatePurchase({ purchaseId }, CALL)
            : await admin.lapsePurchase({ purchaseId }, CALL);
      return shown(r.purchase);
    },
  };
}

export const purchaseCommands: Command[] = [
  {
    name: 'purchase create',
    usage: 'purchase create --org ID --country CC [--quota N]   (monthly checked inputs)',
    options: { org: { type: 'string' }, country: { type: 'string' }, quota: { type: 'string' } },
    async run(flags, env) {
      const quota = intFlag(flags, 'quota', 1, Number.MAX_SAFE_INTEGER);
      const r = await admissionAdmin(env).createPurchase(
        {
          orgId: requireFlag(flags, 'org'),
          country: requireFlag(flags, 'country'),
          monthlyQuota: BigInt(quota ?? 0),
        },
        CALL,
      );
      return shown(r.purchase);
    },
  },
  step('pay', 'purchase pay --purchase ID   (initial payment succeeded; co activates at once)'),
  step('activate', 'purchase activate --purchase ID   (activation step of mx and ar)'),
  step('lapse', 'purchase lapse --purchase ID'),
];
