// What a person has typed is never thrown away by a live update. While a form on the page
// holds edits not yet sent, a change announced over the call's socket (the round answered or
// reassigned elsewhere, say) does not replace the page: a notice says so instead, and the
// person decides (posting then gets the server's clear "already answered" page).
// Once the person has sent a form, the page is on its way out: the answer's own events (the
// server may reply while the post is still waiting) fetch nothing, since the post's answer
// is the next page.
(function () {
  "use strict";
  var edited = false;
  var sent = false;

  document.addEventListener("input", function (event) {
    if (event.target.closest && event.target.closest("#live-main form")) edited = true;
  });

  document.addEventListener("submit", function (event) {
    if (event.target.closest && event.target.closest("#live-main")) sent = true;
  });

  // A page restored from the back/forward cache is live again.
  window.addEventListener("pageshow", function (event) {
    if (event.persisted) sent = false;
  });

  document.addEventListener("htmx:beforeRequest", function (event) {
    var trigger = event.detail && event.detail.elt;
    if (!trigger || !trigger.id || trigger.id.indexOf("live-call-") !== 0) return;
    if (sent) {
      event.preventDefault();
      return;
    }
    if (!edited) return;
    event.preventDefault();
    var notice = document.getElementById("live-stale-notice");
    if (notice) notice.hidden = false;
  });
})();
