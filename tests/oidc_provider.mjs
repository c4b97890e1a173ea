// A real OpenID Connect provider (npm oidc-provider, panva) on 127.0.0.1, port 0, for the
// approval server's sign-in tests. argv: the redirect URI. Prints {"issuer": …} once listening.
// Accounts: whatever login is typed on its development login page; `sub` is the login. The
// e-mail claim is "<login>@example.test", or what the JSON file $OIDC_EMAILS maps the login to
// when it is read (so a test can change a person's e-mail while the subject stays).
import fs from "node:fs";
import http from "node:http";

const Provider = (await import(process.env.OIDC_PROVIDER_PATH)).default;
const [redirect] = process.argv.slice(2);
const server = http.createServer();
server.listen(0, "127.0.0.1", () => {
  const issuer = `http://127.0.0.1:${server.address().port}`;
  const provider = new Provider(issuer, {
    clients: [
      {
        client_id: "askgate",
        client_secret: "askgate-test-secret",
        redirect_uris: [redirect],
        grant_types: ["authorization_code"],
        response_types: ["code"],
      },
    ],
    features: { devInteractions: { enabled: true } },
    async findAccount(ctx, id) {
      return {
        accountId: id,
        async claims() {
          let emails = {};
          try {
            emails = JSON.parse(fs.readFileSync(process.env.OIDC_EMAILS || "", "utf8"));
          } catch {}
          return { sub: id, email: emails[id] || `${id}@example.test` };
        },
      };
    },
    claims: { openid: ["sub"], email: ["email"] },
    cookies: { keys: ["askgate-test-cookie-key"] },
  });
  server.on("request", provider.callback());
  console.log(JSON.stringify({ issuer }));
});
