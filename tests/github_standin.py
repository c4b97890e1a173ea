"""A stand-in for GitHub's OAuth web flow (github.com cannot be reached from here), following
GitHub's documented contract ("Authorizing OAuth apps", the web application flow, and the REST
"Get the authenticated user" endpoint):

* ``GET /login/oauth/authorize?client_id&redirect_uri&state`` — the person is taken as already
  signed in to GitHub and consenting: redirect to ``redirect_uri?code=…&state=…`` (the state
  echoed unchanged);
* ``POST /login/oauth/access_token`` (form: client_id, client_secret, code, redirect_uri) with
  ``Accept: application/json`` → ``{"access_token", "token_type": "bearer", "scope"}``, or
  ``{"error": "bad_verification_code"}`` (HTTP 200, as GitHub does) for an unknown or reused code;
* ``GET /user`` with ``Authorization: Bearer <token>`` → ``{"login", "id", …}`` (401 otherwise).

`accounts` maps the next person to sign in (set `who`) to their numeric id and current login, so a
test can rename a login or hand an old login to somebody else.
"""

from __future__ import annotations

import os
from urllib.parse import parse_qs, urlencode, urlsplit

from standin_http import JsonHandler, serve, stop


class GitHubStandIn:
    def __init__(self, client_id: str, client_secret: str) -> None:
        self.client_id = client_id
        self.client_secret = client_secret
        self.who: tuple[int, str] = (1, "octocat")
        self._codes: dict[str, tuple[int, str]] = {}
        self._tokens: dict[str, tuple[int, str]] = {}

    def start(self) -> GitHubStandIn:
        stand_in = self

        class Handler(JsonHandler):
            def do_GET(self) -> None:
                url = urlsplit(self.path)
                query = {k: v[0] for k, v in parse_qs(url.query).items()}
                if url.path == "/login/oauth/authorize":
                    if query.get("client_id") != stand_in.client_id:
                        self._json(404, {"error": "not found"})
                        return
                    code = os.urandom(10).hex()
                    stand_in._codes[code] = stand_in.who
                    back = urlencode({"code": code, "state": query.get("state", "")})
                    self.send_response(302)
                    self.send_header("Location", f"{query['redirect_uri']}?{back}")
                    self.end_headers()
                    return
                if url.path == "/user":
                    token = self.headers.get("authorization", "").removeprefix("Bearer ")
                    person = stand_in._tokens.get(token)
                    if person is None:
                        self._json(401, {"message": "Bad credentials"})
                        return
                    self._json(200, {"login": person[1], "id": person[0], "type": "User"})
                    return
                self._json(404, {"message": "Not Found"})

            def do_POST(self) -> None:
                data = self.rfile.read(int(self.headers.get("content-length", 0))).decode()
                form = {k: v[0] for k, v in parse_qs(data).items()}
                if self.path != "/login/oauth/access_token":
                    self._json(404, {"message": "Not Found"})
                    return
                secret_ok = (form.get("client_id"), form.get("client_secret")) == (
                    stand_in.client_id,
                    stand_in.client_secret,
                )
                person = stand_in._codes.pop(form.get("code", ""), None)  # single use
                if not secret_ok:
                    self._json(200, {"error": "incorrect_client_credentials"})
                elif person is None:
                    self._json(200, {"error": "bad_verification_code"})
                else:
                    token = f"gho_{os.urandom(12).hex()}"
                    stand_in._tokens[token] = person
                    self._json(200, {"access_token": token, "token_type": "bearer", "scope": ""})

        self._server, self.url = serve(Handler)
        return self

    def close(self) -> None:
        stop(self._server)
