// Structured JSON logs (pino). Fields that could carry secrets are redacted wherever they appear.
import { pino, type Logger } from "pino";
import type { LogLevel } from "../config.js";

export type { Logger };

export function createLogger(level: LogLevel, destination?: NodeJS.WritableStream): Logger {
  return pino(
    {
      level,
      base: undefined,
      timestamp: pino.stdTimeFunctions.isoTime,
      redact: {
        paths: ["*.authorization", "*.client_secret", "*.clientSecret", "*.webhookSecret", "*.access_token", "*.password", "*.secret"],
        censor: "[redacted]",
      },
    },
    destination as pino.DestinationStream | undefined,
  );
}
