// The conformance test of CheckRequest.phone_list (registry_adapter.proto): optional for an adapter; one
// that announces it (the `dnc-check-phone-list` header) must answer it exactly as it answers `phones`.
import grpc from '@grpc/grpc-js';
import { assert, expectGrpcCode, name, varint } from './assert.mjs';

/** The test, on the suite's own invalid inputs (`GARBAGE`). */
export function phoneListTest({ GARBAGE }) {
  return {
    title: 'phone_list (optional): an adapter that announces it answers as for phones, and refuses both',
    run: async ({ conn, country, registered }) => {
      const inputs = [...registered.slice(0, 20), ...GARBAGE, ''];
      const plain = await conn.checkAs({ country, phones: inputs });
      if (plain.error) throw plain.error;
      if (plain.header !== '1') {
        return 'not announced (no dnc-check-phone-list header): the platform sends this adapter phones only';
      }
      const list = Buffer.concat(
        inputs.flatMap((p) => {
          const bytes = Buffer.from(p, 'utf8');
          return [Buffer.from(varint(bytes.length)), bytes];
        }),
      );
      const listed = await conn.checkAs({ country, phoneList: list });
      if (listed.error) throw listed.error;
      assert(listed.header === '1', 'an answer to phone_list without the dnc-check-phone-list header');
      assert(listed.response.outcomes.length === inputs.length, 'one outcome per input of phone_list');
      listed.response.outcomes.forEach((o, i) => {
        assert(
          o === plain.response.outcomes[i],
          `input #${i}: ${name(o)} from phone_list, ${name(plain.response.outcomes[i])} from phones`,
        );
      });
      const both = await conn.checkAs({ country, phones: inputs.slice(0, 1), phoneList: list });
      assert(both.error, 'a request with both phones and phone_list was answered');
      expectGrpcCode(both.error, [grpc.status.INVALID_ARGUMENT], 'both phones and phone_list');
      assert(both.header === '1', 'a refusal without the dnc-check-phone-list header');
    },
  };
}
