// DOM building that cannot run what it shows: every text goes in as a text
// node (never parsed as HTML), and attributes are set one by one by name.

export function el(tag, props = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(props)) {
    if (value === undefined || value === null || value === false) continue;
    if (name === "class") node.className = value;
    else if (name === "text") node.textContent = String(value);
    else if (name.startsWith("on")) node.addEventListener(name.slice(2), value);
    else if (name === "dataset") Object.assign(node.dataset, value);
    else if (name === "value") node.value = value;
    else if (name === "checked") node.checked = Boolean(value);
    else node.setAttribute(name, value === true ? "" : String(value));
  }
  append(node, children);
  return node;
}

export function append(node, children) {
  for (const child of children.flat(Infinity)) {
    if (child === undefined || child === null || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

export function clear(node) {
  node.replaceChildren();
  return node;
}

export function formatTime(seconds) {
  if (seconds === undefined || seconds === null || !Number.isFinite(Number(seconds))) return "";
  const date = new Date(Number(seconds) * 1000);
  return date.toISOString().replace("T", " ").replace("Z", "");
}

export function shortTime(seconds) {
  return formatTime(seconds).slice(11, 23);
}

export function json(value, indent = 2) {
  try {
    return JSON.stringify(value, null, indent);
  } catch {
    return String(value);
  }
}

export function preview(value, length = 80) {
  const text = typeof value === "string" ? value : json(value, 0);
  if (text === undefined) return "undefined";
  return text.length > length ? text.slice(0, length - 1) + "…" : text;
}

// A confirmation in the page (no window.confirm: it blocks the live streams
// and cannot show what will happen in detail). Resolves to the form's values,
// or null when cancelled.
export function confirmDialog({ title, message, fields = [], confirm = "Confirm", danger = false }) {
  return new Promise((resolve) => {
    const inputs = fields.map((field) =>
      field.multiline
        ? el("textarea", { name: field.name, rows: 6, value: field.value ?? "" })
        : el("input", { name: field.name, value: field.value ?? "", placeholder: field.placeholder ?? "" }),
    );
    const cancelButton = el("button", { type: "button", text: "Cancel" });
    const confirmButton = el("button", {
      type: "submit",
      class: danger ? "danger" : "primary",
      text: confirm,
    });
    const form = el(
      "form",
      { method: "dialog" },
      el("h2", { text: title }),
      el("p", { text: message }),
      fields.map((field, index) => el("label", {}, field.label, inputs[index])),
      el("div", { class: "buttons" }, cancelButton, confirmButton),
    );
    const dialog = el("dialog", { class: "confirm", "aria-label": title }, form);
    let answered = false;
    const finish = (values) => {
      if (answered) return;
      answered = true;
      dialog.close();
      dialog.remove();
      resolve(values);
    };
    cancelButton.addEventListener("click", () => finish(null));
    dialog.addEventListener("cancel", () => finish(null));
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      const values = {};
      fields.forEach((field, index) => (values[field.name] = inputs[index].value));
      finish(values);
    });
    document.body.append(dialog);
    dialog.showModal();
    (inputs[0] ?? confirmButton).focus();
  });
}
