// Spectral's $ref resolver (`spectral lint --resolver`), reading a `.md` file as what it is in the
// contract: the text of a description (the guides, openapi/guides/*.md, which Redocly's bundle
// inlines). Spectral parses every file a $ref names as YAML (JSON for .json), which Markdown is
// not; handed over as a JSON string, a YAML scalar, it arrives as the text. Everything else is
// read as Spectral's own resolver reads it (the modules are Spectral CLI's).
const { createResolveHttp, resolveFile } = require("@stoplight/json-ref-readers");
const { Resolver } = require("@stoplight/spectral-ref-resolver");
const { DEFAULT_REQUEST_OPTIONS } = require("@stoplight/spectral-runtime");

const resolveHttp = createResolveHttp(DEFAULT_REQUEST_OPTIONS);

module.exports = new Resolver({
  resolvers: {
    https: { resolve: resolveHttp },
    http: { resolve: resolveHttp },
    file: { resolve: async (ref) => (ref.path().endsWith(".md") ? JSON.stringify(await resolveFile(ref)) : resolveFile(ref)) },
  },
});
