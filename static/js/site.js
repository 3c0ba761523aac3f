// Copy buttons: <button data-copy="text"> or data-copy-target="#id". Works without htmx.
document.addEventListener("click", async (event) => {
  const button = event.target.closest("[data-copy], [data-copy-target]");
  if (!button) return;
  const target = button.dataset.copyTarget && document.querySelector(button.dataset.copyTarget);
  const text = target ? target.textContent : button.dataset.copy;
  try {
    await navigator.clipboard.writeText(text);
    button.dataset.copied = "true";
    setTimeout(() => delete button.dataset.copied, 1500);
  } catch {
    button.dataset.copied = "false";
  }
});
