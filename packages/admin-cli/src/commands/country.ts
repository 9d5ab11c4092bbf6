import { timestampDate, timestampFromDate } from '@bufbuild/protobuf/wkt';
import type { admissionv1 } from '@dnc/proto';
import { type Command, requireFlag, timeFlag, UsageError } from '../cli.js';
import { admissionAdmin } from './org.js';

function shown(s: admissionv1.CountryStatus | undefined) {
  if (!s) return null;
  return {
    country: s.country,
    live: s.live,
    maintenance_until: s.maintenanceUntil ? timestampDate(s.maintenanceUntil).toISOString() : null,
    adapter_serving: s.adapterServing,
  };
}

export const countryCommands: Command[] = [
  {
    name: 'country maintenance',
    usage: 'country maintenance --country CC --until ISO8601 | --clear',
    options: { country: { type: 'string' }, until: { type: 'string' }, clear: { type: 'boolean' } },
    async run(flags, env) {
      const country = requireFlag(flags, 'country');
      const admin = admissionAdmin(env);
      const clear = flags['clear'] === true;
      const until = flags['until'];
      if (clear === (typeof until === 'string'))
        throw new UsageError('give exactly one of --until or --clear');
      if (clear)
        return shown((await admin.clearMaintenance({ country }, { timeoutMs: 10_000 })).countryStatus);
      // With its zone: one without was read in the operator's local time (a review, 2026-12-05).
      const at = timeFlag(flags, 'until')!;
      const r = await admin.setMaintenance({ country, until: timestampFromDate(at) }, { timeoutMs: 10_000 });
      return shown(r.countryStatus);
    },
  },
  {
    name: 'country list',
    usage: 'country list',
    options: {},
    async run(_flags, env) {
      const r = await admissionAdmin(env).listCountries({}, { timeoutMs: 10_000 });
      return { countries: r.countries.map(shown) };
    },
  },
];
