// Live refresh from the server's event stream (signed-in pages only); no build step.
(function () {
  "use strict";
  var live = document.querySelector("[data-live]");
  var card = document.getElementById("approval");
  if (!window.EventSource || (!live && !card)) return;
  var source = new EventSource("/v1/events");
  function refreshSoon() { window.setTimeout(function () { window.location.reload(); }, 150); }
  source.addEventListener("approval:requested", function () { if (live) refreshSoon(); });
  source.addEventListener("permissions:decision", function (event) {
    if (live) { refreshSoon(); return; }
    if (card && event.lastEventId === card.dataset.id) refreshSoon();
  });
  source.onerror = function () { if (source.readyState === 2) source.close(); };
})();
