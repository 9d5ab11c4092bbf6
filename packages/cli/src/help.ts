import { COUNTRY_CODES } from '@dnc-scrub/sdk';

const EXIT_CODES = `Exit codes:
  0    done (scrub: a complete result was written; jobs wait: the job succeeded)
  1    the service answered an error, or the job ended failed, expired or cancelled (code on stderr)
  2    usage error, missing API key, or an input file that cannot be used (nothing was sent)
  130  interrupted (Ctrl-C); a submitted job keeps running: dnc jobs wait <job_id>`;

const ENVIRONMENT = `Environment:
  DNC_API_KEY     API key (or --api-key-file FILE, "-" reads it from stdin)
  DNC_BASE_URL    base address (default http://127.0.0.1:8080; or --base-url URL); http:// only to this
                  machine unless DNC_ALLOW_INSECURE_HTTP=1 (the API key would cross the network in clear)`;

const SAFE = `"safe" means only: not found in the selected registry at the time of the check. It is not consent,
not reachability, and not compliance with other calling rules such as calling hours.`;

const TABLE_OPTIONS = `Input files:
  JSON array of strings, one number per line, or CSV/TSV (chosen by extension or content; --input-format
  json|lines|csv|tsv to say it). CSV/TSV: quoted fields, a UTF-8 byte order mark and any one-character
  delimiter (detected among , ; tab |, or --delimiter C); a first row is a header when it names a phone
  column (--header/--no-header to say it); the phone column is the only one named phone/tel/mobile/
  celular/teléfono..., or --column NAME|N (N counts from 1); when that is in doubt, --column is asked for.
  "-" reads standard input.
  --column NAME|N        the column that holds the phone numbers
  --delimiter C          the field delimiter ("\\t" for tab)
  --header, --no-header  whether the first row is a header
  --input-format F       json | lines | csv | tsv`;

const OUTPUT_OPTIONS = `Output:
  --format F   csv: the original rows in their order with dnc_status (prohibited|safe|invalid) and
                    dnc_reason columns added (default for CSV/TSV input);
               json: the ScrubResult document (default otherwise);
               ndjson: one {"row","input","dnc_status","dnc_reason"} object per input line.
  --out FILE   write there (created readable by you only) instead of stdout`;

export const HELP = {
  main: `dnc - check phone numbers against a country's Do-Not-Call registry

Usage:
  dnc scrub --country <cc> <file> [options]     scrub a list (v1 up to 10,000 numbers, else a v2 job)
  dnc jobs get|wait|result|cancel <job_id>      follow a v2 job
  dnc help [scrub|jobs]                         help of one command
  dnc --version

Countries: ${COUNTRY_CODES.join(', ')}.

Examples:
  dnc scrub --country co contacts.csv --out contacts-scrubbed.csv
  dnc scrub --country mx numbers.txt --format json
  dnc scrub --country ar big.csv --detach && dnc jobs wait <job_id>

${ENVIRONMENT}

${EXIT_CODES}

${SAFE}`,

  scrub: `dnc scrub - scrub one list of phone numbers

Usage:
  dnc scrub --country <cc> <file> [--column NAME|N] [--format csv|json|ndjson] [--out FILE]
            [--detach] [--idempotency-key KEY] [--api-key-file FILE] [--base-url URL]

Up to 10,000 numbers use the synchronous v1 API; more (up to 500,000) run as a v2 job with a progress
indicator on a terminal. --detach always submits a v2 job, prints its id and exits (follow it with
dnc jobs wait, then dnc jobs result). The request id and the time of the registry snapshot the answer came
from are printed on stderr.

--idempotency-key KEY (1 to 255 visible ASCII characters, no spaces) names this request; without it one is
made. When the answer is lost or can be retried, stderr names the key: run the same command with it to get
the first request's answer or job, never a second charge.

${TABLE_OPTIONS}

${OUTPUT_OPTIONS}

Examples:
  dnc scrub --country co contacts.csv > contacts-scrubbed.csv
  dnc scrub --country co leads.csv --column Mobile --out leads-scrubbed.csv
  dnc scrub --country mx export.tsv --column 3 --no-header --format ndjson
  dnc scrub --country ar list.csv --delimiter ';' --detach
  cat numbers.txt | dnc scrub --country co - --format json

${ENVIRONMENT}

${EXIT_CODES}

${SAFE}`,

  jobs: `dnc jobs - follow a v2 job

Usage:
  dnc jobs get <job_id>                      print the job resource
  dnc jobs wait <job_id>                     poll until the job is terminal; print it
  dnc jobs result <job_id> [--out FILE] [--format json|csv|ndjson --input FILE [table options]]
  dnc jobs cancel <job_id>                   cancel (idempotent); print the job

jobs result writes the ScrubResult (JSON). With --input (the file that was submitted, read with the same
table options as dnc scrub) it writes csv or ndjson joined to the original rows.

Examples:
  dnc jobs wait 0b3f5c1e-8f5a-4f7e-9a43-2f1f6f0f9d11
  dnc jobs result 0b3f5c1e-8f5a-4f7e-9a43-2f1f6f0f9d11 --out result.json
  dnc jobs result 0b3f5c1e-8f5a-4f7e-9a43-2f1f6f0f9d11 --input big.csv --format csv --out big-scrubbed.csv

${ENVIRONMENT}

${EXIT_CODES}`,
} as const;

export type HelpTopic = keyof typeof HELP;
