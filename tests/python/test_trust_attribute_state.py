"""State a compiled function reads beyond its arguments and its own globals: __slots__
attributes (of self, of a callable object, of a global object, of an argument), properties of
self, default argument values, the globals of helpers (reached through globals or closure
cells) and the arguments of a functools.partial. Each was fixed at the first trace, so a later
change gave the old answer silently; each must be read at every call, as eager NumPy reads it."""
import dataclasses
import functools

import numpy as np

import kiln

X = np.arange(4.0)


class SlotLayer:
    __slots__ = ("w", "bias", "__private")

    def __init__(self):
        self.w, self.bias, self.__private = 2.0, np.ones(4), 1.0

    def forward(self, x):
        return self.scaled(x) + self.bias

    def scaled(self, x):   # another method: the stand-in for self must carry it too
        return x * self.w * self.__private

    def set_private(self, value):
        self.__private = value


def test_slots_attributes_of_self_are_read_at_each_call():
    layer = SlotLayer()
    compiled = kiln.compile(layer.forward)
    np.testing.assert_array_equal(compiled(X), layer.forward(X))
    layer.bias[:] = 5.0       # in place
    np.testing.assert_array_equal(compiled(X), X * 2 + 5)
    layer.bias = np.zeros(4)  # rebound
    np.testing.assert_array_equal(compiled(X), X * 2)
    layer.w = 7.0
    np.testing.assert_array_equal(compiled(X), X * 7)
    layer.set_private(3.0)    # a name-mangled slot (self.__private)
    np.testing.assert_array_equal(compiled(X), X * 21)


class SlotScale:
    __slots__ = ("k",)

    def __init__(self, k):
        self.k = k

    def __call__(self, x):
        return x * self.k


SETTINGS = SlotScale(2.0)


def scaled_by_settings(x):
    return x * SETTINGS.k


def test_slots_of_a_callable_object_and_of_a_global_object_are_read_at_each_call():
    scale = SlotScale(2.0)
    compiled = kiln.compile(scale)
    compiled(X)
    scale.k = 9.0
    np.testing.assert_array_equal(compiled(X), X * 9)
    reads_global = kiln.compile(scaled_by_settings)
    reads_global(X)
    SETTINGS.k = 3.0
    np.testing.assert_array_equal(reads_global(X), X * 3)


@dataclasses.dataclass(slots=True)
class SlotParams:
    w: np.ndarray
    s: float


class HoldsSlotConfig:
    def __init__(self):
        self.config = SlotScale(2.0)

    def run(self, x):
        return x * self.config.k


def test_slots_objects_in_arguments_and_in_self_are_guarded():
    compiled = kiln.compile(lambda x, scale: x * scale.k)
    scale = SlotScale(2.0)
    compiled(X, scale)
    scale.k = 3.0   # the same object, another value in its slot
    np.testing.assert_array_equal(compiled(X, scale), X * 3)
    # Arrays in a slots object's attributes: not traced, so the call runs eagerly (as for a
    # dataclass with a __dict__), never with the first call's array baked in.
    uses_params = kiln.compile(lambda x, p: x * p.s + p.w)
    params = SlotParams(np.ones(4), 2.0)
    uses_params(X, params)
    params.w[:] = 3.0
    params.s = 4.0
    np.testing.assert_array_equal(uses_params(X, params), X * 4 + 3)
    holder = HoldsSlotConfig()
    run = kiln.compile(holder.run)
    run(X)
    holder.config.k = 6.0
    np.testing.assert_array_equal(run(X), X * 6)


class WithProperty:
    def __init__(self):
        self._scale = 2.0

    @property
    def scale(self):
        return self._scale

    def apply(self, x):
        return x * self.scale


def test_a_property_of_self_reads_the_attributes_behind_it_at_each_call():
    obj = WithProperty()
    compiled = kiln.compile(obj.apply)
    compiled(X)
    obj._scale = 6.0
    np.testing.assert_array_equal(compiled(X), X * 6)


def test_default_argument_values_are_read_at_each_call():
    def scaled(x, s=1.0, table={"k": 1.0}, w=np.ones(4), *, shift=0.0):
        return x * s * table["k"] + w + shift
    compiled = kiln.compile(scaled)
    np.testing.assert_array_equal(compiled(X), X + 1)
    scaled.__defaults__ = (2.0,) + scaled.__defaults__[1:]   # rebound
    np.testing.assert_array_equal(compiled(X), X * 2 + 1)
    scaled.__defaults__[1]["k"] = 5.0                        # a default dict changed in place
    np.testing.assert_array_equal(compiled(X), X * 10 + 1)
    scaled.__defaults__[2][:] = 0.0                          # a default array changed in place
    np.testing.assert_array_equal(compiled(X), X * 10)
    scaled.__kwdefaults__["shift"] = -1.0
    np.testing.assert_array_equal(compiled(X), X * 10 - 1)
    np.testing.assert_array_equal(compiled(X, 1.0, {"k": 1.0}, np.ones(4), shift=0.0), X + 1)


class SlotClock:
    __slots__ = ("t", "dt", "total")

    def __init__(self):
        self.t, self.dt, self.total = 0.0, 0.5, np.zeros(4)

    def step(self, x):
        self.t = self.t + self.dt
        self.total = self.total + x
        return x * self.t


def test_slots_of_self_a_trace_assigns_are_assigned_by_every_run():
    eager, compiled_clock = SlotClock(), SlotClock()
    step = kiln.compile(compiled_clock.step)
    for _ in range(4):
        np.testing.assert_array_equal(step(X), eager.step(X))
        assert compiled_clock.t == eager.t
        np.testing.assert_array_equal(compiled_clock.total, eager.total)


SCALE = 2.0
TABLE = np.ones(4)


def scaled_by_module_state(x):   # a helper: its globals are read as the function's own
    return x * SCALE + TABLE


def calls_a_helper(x):
    return scaled_by_module_state(x) + 1


def wrapping(function):   # a decorator: the function it wraps sits in a closure cell
    def wrapper(*args):
        return function(*args)
    return wrapper


def test_globals_of_helpers_reached_through_globals_and_closures_are_read_at_each_call():
    global SCALE
    through_global = kiln.compile(calls_a_helper)
    through_cell = kiln.compile(wrapping(scaled_by_module_state))
    try:
        np.testing.assert_array_equal(through_global(X), X * 2 + 2)
        np.testing.assert_array_equal(through_cell(X), X * 2 + 1)
        SCALE = 5.0                   # a helper's number rebound
        np.testing.assert_array_equal(through_global(X), X * 5 + 2)
        np.testing.assert_array_equal(through_cell(X), X * 5 + 1)
        TABLE[:] = 3.0                # a helper's array changed in place
        np.testing.assert_array_equal(through_global(X), X * 5 + 4)
        np.testing.assert_array_equal(through_cell(X), X * 5 + 3)
    finally:
        SCALE = 2.0
        TABLE[:] = 1.0


def test_the_arguments_of_a_compiled_partial_are_read_at_each_call():
    def apply(x, w, s=1.0):
        return x * w * s
    weights = np.arange(4.0)
    partial = functools.partial(apply, w=weights)
    compiled = kiln.compile(partial)
    np.testing.assert_array_equal(compiled(X), X * weights)
    weights[:] = 5.0                  # in place
    np.testing.assert_array_equal(compiled(X), X * 5)
    partial.keywords["s"] = 3.0       # a keyword set
    np.testing.assert_array_equal(compiled(X), X * 15)


class DecoratedLayer:
    def __init__(self):
        self.w, self.s = np.ones(4), 2.0

    @wrapping
    def run(self, x):   # the method is in the decorator's closure cell
        return x * self.w * self.s


def test_attributes_a_decorated_method_reads_are_read_at_each_call():
    layer = DecoratedLayer()
    compiled = kiln.compile(layer.run)
    compiled(X)
    layer.w[:] = 3.0
    layer.s = 5.0
    np.testing.assert_array_equal(compiled(X), X * 15)


class LazyMomentum:
    """An optimizer whose state is None until its first step (ML-From-Scratch's optimizers)."""

    def __init__(self):
        self.velocity = None


class Holder:
    def __init__(self):
        self.optimizer = LazyMomentum()


def lazy_step(state, w, g):
    if state.velocity is None:
        state.velocity = np.zeros(np.shape(w))
    state.velocity = 0.9 * state.velocity + g
    return w - 0.1 * state.velocity


def test_an_argument_object_the_trace_stores_into_is_as_it_was_for_the_eager_run():
    # The object holds no array, so the trace runs over it, not a copy, and stored its traced
    # array there; the call then ran eagerly but found that tracer, not None: it skipped the
    # branch and handed the caller tracers (as the result and in the object).
    w, g = np.ones(3), np.full(3, 2.0)
    for make, state_of in ((LazyMomentum, lambda o: o), (Holder, lambda o: o.optimizer)):
        for function in (lazy_step, lambda o, w, g: lazy_step(state_of(o), w, g)):
            if make is Holder and function is lazy_step:
                continue
            mine, theirs = make(), make()
            compiled = kiln.compile(function)
            for _ in range(3):
                got, expected = compiled(mine, w, g), function(theirs, w, g)
                assert type(got) is np.ndarray and type(state_of(mine).velocity) is np.ndarray
                np.testing.assert_allclose(got, expected)
                np.testing.assert_allclose(state_of(mine).velocity, state_of(theirs).velocity)


class ClassState:
    eps = 1.0
    table = np.ones(4)

    def through_self(self, x):
        return x * self.eps + self.table

    def through_type(self, x):
        return x * type(self).eps + self.__class__.eps

    @classmethod
    def through_cls(cls, x):
        return x * cls.eps


def test_class_attributes_read_through_self_or_cls_are_read_at_each_call():
    # self.eps of a class attribute was read by the first trace only: ClassState.eps = 3
    # (or the class's table changed in place) went unseen
    instance = ClassState()
    for method in ("through_self", "through_type", "through_cls"):
        compiled = kiln.compile(getattr(instance, method))
        try:
            for value in (1.0, 3.0, 5.0):
                ClassState.eps = value
                ClassState.table[0] = value
                np.testing.assert_array_equal(compiled(X), getattr(instance, method)(X))
        finally:
            ClassState.eps, ClassState.table = 1.0, np.ones(4)


def test_an_instance_attribute_still_shadows_the_class_one():
    instance = ClassState()
    instance.eps = 7.0
    compiled = kiln.compile(instance.through_type)
    ClassState.eps = 2.0
    try:
        np.testing.assert_array_equal(compiled(X), instance.through_type(X))
        compiled_self = kiln.compile(instance.through_self)
        np.testing.assert_array_equal(compiled_self(X), instance.through_self(X))
        instance.eps = 9.0
        np.testing.assert_array_equal(compiled_self(X), instance.through_self(X))
    finally:
        ClassState.eps = 1.0


def make_scaled(weights):
    def scaled(x):
        return x * weights
    return scaled


def make_adjustable(scale):
    def adjusted(x):
        return x * scale

    def set_scale(value):
        nonlocal scale
        scale = value
    return adjusted, set_scale


WEIGHTS = np.ones(4)
SCALED = make_scaled(WEIGHTS)
ADJUSTED, SET_SCALE = make_adjustable(2.0)


def test_closure_variables_of_helpers_are_read_at_each_call():
    # a helper made by a factory (`loss = make_loss(weights)`) read its closure variables at
    # the first trace only: its weights changed in place, or rebound by a setter, went unseen
    def uses_both(x):
        return SCALED(x) + ADJUSTED(x)
    compiled = kiln.compile(uses_both)
    try:
        for value in (1.0, 2.0, 3.0):
            WEIGHTS[:] = value
            SET_SCALE(value * 10)
            np.testing.assert_array_equal(compiled(X), uses_both(X))
    finally:
        WEIGHTS[:] = 1.0
        SET_SCALE(2.0)


GLOBAL_STATE = ClassState()


def test_class_attributes_of_global_and_closure_objects_are_read_at_each_call():
    local_state = ClassState()

    def reads_both(x):
        return x * GLOBAL_STATE.eps + local_state.eps
    compiled = kiln.compile(reads_both)
    try:
        for value in (1.0, 3.0):
            ClassState.eps = value
            np.testing.assert_array_equal(compiled(X), reads_both(X))
    finally:
        ClassState.eps = 1.0


PARTIAL_WEIGHTS = np.ones(4)
SCALE_BY_WEIGHTS = functools.partial(np.multiply, PARTIAL_WEIGHTS)


def shifted(x, shift):
    return x + shift


SHIFT = functools.partial(shifted, shift=1.0)


def test_the_arguments_of_a_global_partial_are_read_at_each_call():
    # a partial the function calls (not the compiled one) was called as the trace found it:
    # its array changed in place, or a keyword set, went unseen
    def uses_partials(x):
        return SCALE_BY_WEIGHTS(x) + SHIFT(x)
    compiled = kiln.compile(uses_partials)
    try:
        for value in (1.0, 2.0, 3.0):
            PARTIAL_WEIGHTS[:] = value
            SHIFT.keywords["shift"] = value
            np.testing.assert_array_equal(compiled(X), uses_partials(X))
    finally:
        PARTIAL_WEIGHTS[:] = 1.0
        SHIFT.keywords["shift"] = 1.0


DEFAULT_WEIGHTS = np.ones(4)


def weighted(x, w=DEFAULT_WEIGHTS, k=2.0, *, shift=0.0):
    return x * w * k + shift


class WithDefaults:
    def scaled(self, x, s=1.0):
        return x * s

    def run(self, x):
        return self.scaled(x) + weighted(x)


def test_default_values_of_helpers_and_methods_are_read_at_each_call():
    # a helper's defaults were fixed at the trace: its default array changed in place, a
    # keyword-only default set, __defaults__ assigned went unseen
    instance = WithDefaults()
    compiled = kiln.compile(instance.run)
    saved = weighted.__defaults__, dict(weighted.__kwdefaults__), WithDefaults.scaled.__defaults__
    try:
        for value in (1.0, 2.0, 3.0):
            DEFAULT_WEIGHTS[:] = value
            weighted.__kwdefaults__["shift"] = value
            WithDefaults.scaled.__defaults__ = (value,)
            if value == 3.0:
                weighted.__defaults__ = (np.full(4, 7.0), 5.0)
            np.testing.assert_array_equal(compiled(X), instance.run(X))
    finally:
        DEFAULT_WEIGHTS[:] = 1.0
        weighted.__defaults__, WithDefaults.scaled.__defaults__ = saved[0], saved[2]
        weighted.__kwdefaults__ = saved[1]


BASE_OFFSET = 1.0


class Base:
    def forward(self, x):
        return x * self.scale + BASE_OFFSET


class Derived(Base):
    def __init__(self):
        self.scale, self.gain = 2.0, 1.0

    def forward(self, x):
        return super().forward(x) * self.gain


def test_what_a_base_method_reads_through_super_is_read_at_each_call():
    # super().forward(x): the base's method was not searched, so the attributes of self and
    # the globals it reads were read once by the trace
    global BASE_OFFSET
    model = Derived()
    compiled = kiln.compile(model.forward)
    try:
        for value in (2.0, 3.0, 4.0):
            model.scale = value
            BASE_OFFSET = value
            np.testing.assert_array_equal(compiled(X), model.forward(X))
    finally:
        BASE_OFFSET = 1.0


class Activation:
    def act(self, x):
        return np.tanh(x)

    def forward(self, x):
        return self.act(x) + 1.0


GLOBAL_ACTIVATION = Activation()


def _through_global(x):
    return GLOBAL_ACTIVATION.act(x) * 2.0


def _closure_over(activation):
    return lambda x: activation.act(x) - 1.0


def test_methods_replaced_on_the_class_or_shadowed_on_the_object_are_seen():
    """A method of self, of a global object or of a closure's object, replaced on its class
    (`Activation.act = other`) or shadowed by the object's own attribute (`obj.act = other`)
    after a call: the next call runs the new one, as eager Python does."""
    local = Activation()
    bound = Activation()
    functions = [(bound.forward, bound), (_through_global, GLOBAL_ACTIVATION),
                 (_closure_over(local), local)]
    compiled = [kiln.compile(function) for function, _ in functions]
    original = Activation.act
    try:
        for change in ("first", "class", "object", "object removed"):
            if change == "class":
                Activation.act = lambda self, x: np.sin(x)
            for (function, holder), kiln_function in zip(functions, compiled):
                if change == "object":
                    holder.act = lambda x, base=holder: np.cos(x) + id(base) % 7
                elif change == "object removed":
                    vars(holder).pop("act", None)
                np.testing.assert_allclose(kiln_function(X), function(X), rtol=1e-12,
                                           err_msg=f"{function} after {change}")
    finally:
        Activation.act = original
