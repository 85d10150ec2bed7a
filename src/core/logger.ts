// Structured JSON logs (pino). Fields that could carry secrets are redacted wherever they appear,
// and an error's `body` (body-parser attaches the raw request body, a token request's client
// secret included) is never logged. A line about a traced request or execution carries its span's
// `trace_id` and `span_id`, added by its writer (withLogIds, ./spans.ts), to go from the log to
// the trace and back.
import { pino, type Logger } from "pino";

export type { Logger };
export type LogLevel = "fatal" | "error" | "warn" | "info" | "debug" | "trace" | "silent";

export function createLogger(level: LogLevel, destination?: NodeJS.WritableStream): Logger {
  return pino(
    {
      level,
      base: undefined,
      timestamp: pino.stdTimeFunctions.isoTime,
      serializers: {
        err: (e: Error) => {
          const { body: _body, ...logged } = pino.stdSerializers.err(e);
          return logged;
        },
      },
      redact: {
        paths: ["*.authorization", "*.client_secret", "*.clientSecret", "*.webhookSecret", "*.access_token", "*.password", "*.secret"],
        censor: "[redacted]",
      },
    },
    destination as pino.DestinationStream | undefined,
  );
}
