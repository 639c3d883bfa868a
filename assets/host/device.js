// The device script (docs/playground.md, "Devices"): injected by the host
// at document start into the Miniapp view's top frame, before the
// transport and the bridge, on every page the view shows. It shows the page
// what WebKitGTK cannot set per view: the screen's size, touch
// (navigator.maxTouchPoints, 'ontouchstart' in window, and touch events
// made from the mouse). The view's size, page zoom, user agent, languages
// and colour scheme are the engine's; the safe-area variables a style
// sheet's. config: {update, state: {width, height, touch}}.
function (config) {
  'use strict';
  var w = window;
  if (w !== w.top || config === null || typeof config !== 'object') {
    return;
  }
  var O = Object;
  var defineProperty = O.defineProperty;
  var getOwnPropertyDescriptor = O.getOwnPropertyDescriptor;
  var apply = Reflect.apply;
  var state = config.state;

  // The native getters, kept for the desktop (width 0) and no touch.
  function nativeGetter(proto, name) {
    var d = proto ? getOwnPropertyDescriptor(proto, name) : undefined;
    return d && typeof d.get === 'function' ? d.get : null;
  }
  function override(proto, name, value) {
    var get = nativeGetter(proto, name);
    if (get === null) {
      return;
    }
    defineProperty(proto, name, {
      configurable: true,
      enumerable: true,
      get: function () {
        var v = value();
        return v === null ? apply(get, this, []) : v;
      }
    });
  }
  var screenProto = w.Screen && w.Screen.prototype;
  var size = function (dim) {
    return function () { return state.width > 0 ? state[dim] : null; };
  };
  override(screenProto, 'width', size('width'));
  override(screenProto, 'availWidth', size('width'));
  override(screenProto, 'height', size('height'));
  override(screenProto, 'availHeight', size('height'));
  override(w.Navigator && w.Navigator.prototype, 'maxTouchPoints', function () { return state.touch ? 5 : null; });

  // 'ontouchstart' in window is how most pages test for touch.
  function touchProperty() {
    if (state.touch && !('ontouchstart' in w)) {
      defineProperty(w, 'ontouchstart', { value: null, writable: true, configurable: true, enumerable: true });
    } else if (!state.touch && getOwnPropertyDescriptor(w, 'ontouchstart')) {
      delete w.ontouchstart;
    }
  }
  touchProperty();

  // Touch events from the mouse: a press, a drag and a release of the
  // primary button become touchstart, touchmove and touchend on the
  // element pressed, as a phone's touch screen gives them (one finger),
  // before the mouse events themselves.
  // WebKitGTK has no Touch constructor ("Illegal constructor"), but has
  // document.createTouch and createTouchList, which TouchEvent takes.
  var docProto = w.Document && w.Document.prototype;
  var createTouch = docProto && docProto.createTouch;
  var createTouchList = docProto && docProto.createTouchList;
  var TouchEvent = w.TouchEvent;
  var active = null;
  function touchEvent(type, e) {
    if (!state.touch || typeof createTouch !== 'function' || typeof createTouchList !== 'function' ||
        typeof TouchEvent !== 'function' || !e.isTrusted) {
      return;
    }
    if (type === 'touchstart') {
      if (e.button !== 0) {
        return;
      }
      active = e.target;
    }
    if (active === null) {
      return;
    }
    var doc = w.document;
    var target = active;
    try {
      var t = apply(createTouch, doc, [w, target, 1, e.pageX, e.pageY, e.screenX, e.screenY]);
      var ending = type === 'touchend';
      var list = ending ? apply(createTouchList, doc, []) : apply(createTouchList, doc, [t]);
      var changed = apply(createTouchList, doc, [t]);
      var ev = new TouchEvent(type, { bubbles: true, cancelable: true, composed: true,
        touches: list, targetTouches: list, changedTouches: changed });
      if (ending) {
        active = null;
      }
      target.dispatchEvent(ev);
    } catch (err) {
      active = null;
    }
  }
  w.addEventListener('mousedown', function (e) { touchEvent('touchstart', e); }, true);
  w.addEventListener('mousemove', function (e) { if (e.buttons & 1) { touchEvent('touchmove', e); } }, true);
  w.addEventListener('mouseup', function (e) { if (e.button === 0) { touchEvent('touchend', e); } }, true);

  // The host's way to change the device of the page shown, without a
  // reload. Its name is the window's; what it takes is only ever a size and
  // a flag, so a page that calls it fools nobody but itself.
  defineProperty(w, config.update, {
    value: function (next) {
      if (next === null || typeof next !== 'object') {
        return;
      }
      state = { width: +next.width || 0, height: +next.height || 0, touch: next.touch === true };
      touchProperty();
    },
    writable: false, configurable: false, enumerable: false
  });
}
