// Live refresh from the server's event stream (signed-in pages only); no build step.
// The stream opens first; what the page shows is (re)loaded once it is open (onopen, also
// after each reconnect), so anything created or decided between the page's own load and the
// stream's start is shown, never left for the next reload by hand.
(function () {
  "use strict";
  var lists = document.getElementById("lists");
  var card = document.getElementById("approval");
  if (!window.EventSource || !window.fetch || (!lists && !card)) return;
  var source = new EventSource("/v1/events");

  // The list page: its two lists come from GET /?part=lists, one load at a time; an event
  // during a load asks for one more after it, so the last load starts after the last event.
  // The lists are replaced whole, one row per approval id: an approval already on the page
  // (rendered with it, announced by an event, in the reload) shows once.
  var loading = false;
  var again = false;
  function loadLists() {
    if (loading) { again = true; return; }
    loading = true;
    again = false;
    window.fetch("/?part=lists", { credentials: "same-origin", cache: "no-store" })
      .then(function (response) {
        if (response.status === 401) { window.location.reload(); return null; } // signed out
        return response.ok ? response.text() : null;
      })
      .then(function (html) { if (html !== null) lists.innerHTML = html; })
      .catch(function () { /* the server is away: the stream's reconnect reloads */ })
      .then(function () {
        loading = false;
        if (again) loadLists();
      });
  }

  // The card: reloaded when its approval is decided. Its state when the stream opened is
  // read from the card's own URL: a decision made before the stream heard it reloads too.
  function reloadCard() { window.location.reload(); }
  function checkCard() {
    window.fetch(window.location.href, { credentials: "same-origin", cache: "no-store" })
      .then(function (response) { return response.ok ? response.text() : null; })
      .then(function (html) {
        if (html === null) return;
        var now = new DOMParser().parseFromString(html, "text/html").getElementById("approval");
        if (now && now.dataset.status !== card.dataset.status) reloadCard();
      })
      .catch(function () {});
  }

  source.onopen = function () { if (lists) loadLists(); else checkCard(); };
  source.addEventListener("approval:requested", function () { if (lists) loadLists(); });
  source.addEventListener("permissions:decision", function (event) {
    if (lists) { loadLists(); return; }
    if (card && event.lastEventId === card.dataset.id) reloadCard();
  });
  source.onerror = function () { if (source.readyState === 2) source.close(); };
})();
