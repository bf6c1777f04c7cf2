// The dashboard's "tick every round" box ticks or clears every round box of its form. Listening
// on the document keeps it working after htmx replaces the results (filters, paging, actions).
// Without JavaScript the box does nothing and each round is ticked on its own.
(function () {
  "use strict";
  document.addEventListener("change", function (event) {
    var all = event.target;
    if (!all.matches || !all.matches("input[data-tick-all]") || !all.form) return;
    var boxes = all.form.querySelectorAll('input[type="checkbox"][name="' + all.dataset.tickAll + '"]');
    for (var i = 0; i < boxes.length; i++) boxes[i].checked = all.checked;
  });
})();
