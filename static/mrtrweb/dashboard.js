// The dashboard's round list, with htmx. Without JavaScript none of this runs: each round is
// ticked on its own and every filter or action loads a page.
(function () {
  "use strict";

  // The "tick every round" box ticks or clears every round box of its form. Listening on the
  // document keeps it working after htmx replaces the results (filters, paging, actions).
  document.addEventListener("change", function (event) {
    var all = event.target;
    if (!all.matches || !all.matches("input[data-tick-all]") || !all.form) return;
    var boxes = all.form.querySelectorAll('input[type="checkbox"][name="' + all.dataset.tickAll + '"]');
    for (var i = 0; i < boxes.length; i++) boxes[i].checked = all.checked;
  });

  // A new list (a filter typed, picked or submitted, a page, a sort) may arrive after the admin
  // ticked rounds or chose an action in the list they had: the text filters ask 500 ms after
  // the last key, and a slow reply comes later still. It keeps what they did there: the rounds
  // still listed stay ticked and the bulk bar keeps its choice. A round the new list no longer
  // shows loses its tick, so nothing is done to a round the admin cannot see. While the list's
  // place holds the question "Cancel 3 rounds?", a list reply is dropped: the admin answers the
  // question first ("No, keep it as it is" brings the list back). Only the list's GETs: the
  // bulk form's own replies (the question, then the list after acting) start afresh.
  var LIST = "round-results";
  var BAR = ["action", "assign_user", "assign_group"];

  function kept(list) {
    var ticked = {};
    var boxes = list.querySelectorAll('input[type="checkbox"][name="rounds"]:checked');
    for (var i = 0; i < boxes.length; i++) ticked[boxes[i].value] = true;
    var bar = {};
    for (var j = 0; j < BAR.length; j++) {
      var field = list.elements.namedItem(BAR[j]);
      if (field && field.value) bar[BAR[j]] = field.value;
    }
    return { ticked: ticked, bar: bar, any: boxes.length > 0 || Object.keys(bar).length > 0 };
  }

  // Written as attributes into the reply's HTML before htmx swaps it in, so the new list never
  // shows, even for a frame, without the ticks.
  function carry(fresh, was) {
    var boxes = fresh.querySelectorAll('input[type="checkbox"][name="rounds"]');
    var all = boxes.length > 0;
    for (var i = 0; i < boxes.length; i++) {
      if (was.ticked[boxes[i].value]) boxes[i].setAttribute("checked", "");
      else all = false;
    }
    var tickAll = fresh.querySelector('input[data-tick-all="rounds"]');
    if (tickAll && all) tickAll.setAttribute("checked", "");
    for (var name in was.bar) {
      var field = fresh.querySelector('[name="' + name + '"]');
      if (!field) continue;
      if (field.tagName === "SELECT") {
        for (var k = 0; k < field.options.length; k++) {
          if (field.options[k].value === was.bar[name]) field.options[k].setAttribute("selected", "");
          else field.options[k].removeAttribute("selected");
        }
      } else {
        field.setAttribute("value", was.bar[name]);
      }
    }
  }

  document.addEventListener("htmx:beforeSwap", function (event) {
    var detail = event.detail;
    var list = detail.target;
    if (!detail.shouldSwap || !list || list.id !== LIST) return;
    if (!detail.requestConfig || detail.requestConfig.verb !== "get") return;
    if (list.classList.contains("confirm-card")) {
      detail.shouldSwap = false;
      return;
    }
    var was = kept(list);
    if (!was.any) return;
    var reply = document.createElement("template");
    reply.innerHTML = detail.serverResponse;
    var fresh = reply.content.getElementById(LIST);
    if (!fresh) return;
    carry(fresh, was);
    detail.serverResponse = reply.innerHTML;
  });
})();
