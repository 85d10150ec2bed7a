// How long the server asks a client to wait before it tries again: `Retry-After` (seconds or an
// HTTP-date) and the IETF RateLimit field, whose exhausted quotas (`r=0`) give the seconds until
// they reset (`t`), as the API's rate limits send it: `"credential";r=0;t=12`. The longest wins.

/** The wait the answer's headers ask for, in milliseconds; undefined when they ask for none. */
export function serverWaitMs(headers: Headers, now: number): number | undefined {
  const waits = [retryAfterMs(headers.get("retry-after"), now), ...exhaustedQuotasMs(headers.get("ratelimit"))].filter((w) => w !== undefined);
  return waits.length === 0 ? undefined : Math.max(...waits);
}

function retryAfterMs(value: string | null, now: number): number | undefined {
  if (value === null) return undefined;
  const text = value.trim();
  if (/^\d+$/.test(text)) return Number(text) * 1000;
  const date = Date.parse(text);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}

function exhaustedQuotasMs(value: string | null): number[] {
  if (value === null) return [];
  return value.split(",").flatMap((item) => {
    const params = new Map(item.split(";").slice(1).map((p) => p.trim().split("=", 2) as [string, string | undefined]));
    const reset = params.get("t");
    return params.get("r") === "0" && reset !== undefined && /^\d+$/.test(reset) ? [Number(reset) * 1000] : [];
  });
}
