// What a person has typed is never thrown away by a live update. While a form on the page
// holds edits not yet sent, a change announced over the call's socket (the round answered or
// reassigned elsewhere, say) does not replace the page: a notice says so instead, and the
// person decides (posting then gets the server's clear "already answered" page).
(function () {
  "use strict";
  var edited = false;

  document.addEventListener("input", function (event) {
    if (event.target.closest && event.target.closest("#live-main form")) edited = true;
  });

  document.addEventListener("htmx:beforeRequest", function (event) {
    var trigger = event.detail && event.detail.elt;
    if (!edited || !trigger || !trigger.id || trigger.id.indexOf("live-call-") !== 0) return;
    event.preventDefault();
    var notice = document.getElementById("live-stale-notice");
    if (notice) notice.hidden = false;
  });
})();
