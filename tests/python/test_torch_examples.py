"""torch.compile(backend="kiln") on the models of github.com/pytorch/examples (BSD-3-Clause),
written by others: each a compact restatement of the model, its comment naming the source file,
at small sizes with random inputs, run as its program runs it (its optimizer and loss, its
training loop's shape: carried hidden states, clip_grad_norm_, `p.data.add_`, LBFGS's closure,
two optimizers of a GAN) and compared with eager PyTorch: eval under no_grad, then a few
training steps (losses and parameters). Compiled whole (unsupported_ops="error") where the
model converts whole. Adam is avoided on parameters whose exact gradient is zero (a key
projection's bias, a convolution's bias before InstanceNorm): their float32 gradients are
rounding noise, which Adam scales to full steps in eager PyTorch as in any compiler.
"""
import copy
import math

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.distributions import Categorical

import kiln.torch  # noqa: F401
from torch_fixtures import fresh_dynamo  # noqa: F401 (autouse)

WHOLE = {"options": {"unsupported_ops": "error"}}


def _assert_close(got, want, tolerance=1e-4):
    """float32 tolerance, the absolute part relative to the largest value."""
    for g, w in zip(got, want, strict=True):
        largest = float(w.detach().abs().max()) if w.numel() else 0.0
        torch.testing.assert_close(g.detach(), w.detach(), rtol=tolerance,
                                   atol=tolerance * max(1.0, largest))


def _train(model, run, inputs, loss_of, make_optimizer, steps):
    """The losses of `steps` optimizer steps and the parameters after them."""
    optimizer = make_optimizer(model)
    losses = []
    for _ in range(steps):
        optimizer.zero_grad()
        loss = loss_of(run(*inputs))
        loss.backward()
        optimizer.step()
        losses.append(loss.detach())
    return losses + [parameter.detach() for parameter in model.parameters()]


def _check(model, inputs, loss_of, make_optimizer, steps=2, whole=True, train_mode=True,
           tolerance=1e-4, **compile_options):
    """Eval under no_grad, then `steps` training steps, compiled against eager."""
    options = {**WHOLE, **compile_options} if whole else compile_options
    model.eval()
    compiled = torch.compile(copy.deepcopy(model), backend="kiln", **options)
    with torch.no_grad():
        want, got = model(*inputs), compiled(*inputs)
    _assert_close(_tensors(got), _tensors(want), tolerance)
    torch._dynamo.reset()
    mine = copy.deepcopy(model).train(train_mode)
    compiled = torch.compile(mine, backend="kiln", **options)
    want = _train(model.train(train_mode), model, inputs, loss_of, make_optimizer, steps)
    got = _train(mine, compiled, inputs, loss_of, make_optimizer, steps)
    _assert_close(got, want, tolerance)


def _tensors(result):
    if isinstance(result, torch.Tensor):
        return [result]
    return [tensor for item in result if item is not None for tensor in _tensors(item)]


def _sgd(model):
    return torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)


def _adam(model):
    return torch.optim.Adam(model.parameters(), lr=1e-3)


# ---- mnist/main.py (also mnist_hogwild/main.py) ----

class _MnistNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 32, 3, 1)
        self.conv2 = nn.Conv2d(32, 64, 3, 1)
        self.dropout1 = nn.Dropout(0.25)
        self.dropout2 = nn.Dropout(0.5)
        self.fc1 = nn.Linear(9216, 128)
        self.fc2 = nn.Linear(128, 10)

    def forward(self, x):
        x = F.relu(self.conv2(F.relu(self.conv1(x))))
        x = self.dropout1(F.max_pool2d(x, 2))
        x = self.dropout2(F.relu(self.fc1(torch.flatten(x, 1))))
        return F.log_softmax(self.fc2(x), dim=1)


def test_mnist_net_with_adadelta():
    torch.manual_seed(0)
    model, target = _MnistNet(), torch.randint(0, 10, (3,))
    # train(), dropout off: the masks are kiln's own draws (the same distribution, not eager's)
    model.dropout1.p = model.dropout2.p = 0.0
    _check(model, (torch.randn(3, 1, 28, 28),), lambda out: F.nll_loss(out, target),
           lambda m: torch.optim.Adadelta(m.parameters(), lr=1.0))


# ---- mnist_forward_forward/main.py ----

class _ForwardForwardLayer(nn.Linear):
    def forward(self, x):
        x_direction = x / (x.norm(2, 1, keepdim=True) + 1e-4)
        return torch.relu(torch.mm(x_direction, self.weight.T) + self.bias.unsqueeze(0))


def _overlay_y_on_x(x, y):
    x_ = x.clone()
    x_[:, :10] *= 0.0
    x_[range(x.shape[0]), y] = x.max()
    return x_


def _predict(layers, x):
    goodness_per_label = []
    for label in range(10):
        h = _overlay_y_on_x(x, label)
        goodness = []
        for layer in layers:
            h = layer(h)
            goodness = goodness + [h.pow(2).mean(1)]
        goodness_per_label += [sum(goodness).unsqueeze(1)]
    return torch.cat(goodness_per_label, 1).argmax(1)


def test_mnist_forward_forward_layers_with_their_own_adam_and_predict():
    torch.manual_seed(0)
    x, y = torch.rand(8, 784), torch.randint(0, 10, (8,))
    layers = [_ForwardForwardLayer(784, 32), _ForwardForwardLayer(32, 32)]

    def train(layers, compiled):
        h_pos, h_neg = _overlay_y_on_x(x, y), _overlay_y_on_x(x, (y + 1) % 10)
        results = []
        for layer in layers:
            run = torch.compile(layer, backend="kiln", **WHOLE) if compiled else layer
            optimizer = torch.optim.Adam(layer.parameters(), lr=0.03)
            for _ in range(3):
                g_pos, g_neg = run(h_pos).pow(2).mean(1), run(h_neg).pow(2).mean(1)
                loss = torch.log1p(torch.exp(torch.cat([-g_pos + 2.0, g_neg - 2.0]))).mean()
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                results.append(loss.detach())
            h_pos, h_neg = run(h_pos).detach(), run(h_neg).detach()
        predict = torch.compile(_predict, backend="kiln", **WHOLE) if compiled else _predict
        return results + [predict(layers, x).float()] + [
            parameter.detach() for layer in layers for parameter in layer.parameters()]
    want = train(copy.deepcopy(layers), compiled=False)
    got = train(layers, compiled=True)
    _assert_close(got, want)


# ---- vae/main.py ----

class _VAE(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1, self.fc21, self.fc22 = nn.Linear(784, 64), nn.Linear(64, 8), nn.Linear(64, 8)
        self.fc3, self.fc4 = nn.Linear(8, 64), nn.Linear(64, 784)

    def forward(self, x):
        h1 = F.relu(self.fc1(x.view(-1, 784)))
        mu, logvar = self.fc21(h1), self.fc22(h1)
        z = mu + torch.randn_like(mu) * torch.exp(0.5 * logvar)
        return torch.sigmoid(self.fc4(F.relu(self.fc3(z)))), mu, logvar


def _vae_loss(recon_x, x, mu, logvar):
    bce = F.binary_cross_entropy(recon_x, x.view(-1, 784), reduction='sum')
    return bce - 0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp())


def test_vae_with_its_noise_drawn_in_the_graph():
    torch.manual_seed(0)
    model, x = _VAE(), torch.rand(64, 1, 28, 28)
    compiled = torch.compile(copy.deepcopy(model), backend="kiln", **WHOLE)
    optimizer = torch.optim.Adam(compiled.parameters(), lr=1e-3)
    recon, mu, logvar = compiled(x)
    want_recon, want_mu, want_logvar = model(x)
    _assert_close([mu, logvar], [want_mu, want_logvar])  # the noise is kiln's own draw
    assert 0 < float(recon.min()) and float(recon.max()) < 1
    assert abs(float(recon.mean() - want_recon.mean())) < 0.01
    loss = _vae_loss(recon, x, mu, logvar)
    loss.backward()
    optimizer.step()
    recon, mu, logvar = compiled(x)
    assert math.isfinite(float(loss)) and float(_vae_loss(recon, x, mu, logvar)) < float(loss)


# ---- dcgan/main.py ----

_NZ, _NGF, _NDF, _NC = 8, 4, 4, 3


def _weights_init(m):
    classname = m.__class__.__name__
    if classname.find('Conv') != -1:
        torch.nn.init.normal_(m.weight, 0.0, 0.02)
    elif classname.find('BatchNorm') != -1:
        torch.nn.init.normal_(m.weight, 1.0, 0.02)
        torch.nn.init.zeros_(m.bias)


def _generator():
    layers = [nn.ConvTranspose2d(_NZ, _NGF * 8, 4, 1, 0, bias=False)]
    for cin, cout in ((8, 4), (4, 2), (2, 1)):
        layers += [nn.BatchNorm2d(_NGF * cin), nn.ReLU(True),
                   nn.ConvTranspose2d(_NGF * cin, _NGF * cout, 4, 2, 1, bias=False)]
    layers += [nn.BatchNorm2d(_NGF), nn.ReLU(True),
               nn.ConvTranspose2d(_NGF, _NC, 4, 2, 1, bias=False), nn.Tanh()]
    return nn.Sequential(*layers).apply(_weights_init)


class _Discriminator(nn.Module):
    def __init__(self):
        super().__init__()
        layers = [nn.Conv2d(_NC, _NDF, 4, 2, 1, bias=False), nn.LeakyReLU(0.2, inplace=True)]
        for cin, cout in ((1, 2), (2, 4), (4, 8)):
            layers += [nn.Conv2d(_NDF * cin, _NDF * cout, 4, 2, 1, bias=False),
                       nn.BatchNorm2d(_NDF * cout), nn.LeakyReLU(0.2, inplace=True)]
        layers += [nn.Conv2d(_NDF * 8, 1, 4, 1, 0, bias=False), nn.Sigmoid()]
        self.main = nn.Sequential(*layers)

    def forward(self, input):
        return self.main(input).view(-1, 1).squeeze(1)


def test_dcgan_training_loop_with_two_adams():
    torch.manual_seed(0)
    generator, discriminator = _generator(), _Discriminator().apply(_weights_init)

    def train(net_g, net_d, compiled):
        run_g = torch.compile(net_g, backend="kiln", **WHOLE) if compiled else net_g
        run_d = torch.compile(net_d, backend="kiln", **WHOLE) if compiled else net_d
        optimizer_d = torch.optim.Adam(net_d.parameters(), lr=2e-4, betas=(0.5, 0.999))
        optimizer_g = torch.optim.Adam(net_g.parameters(), lr=2e-4, betas=(0.5, 0.999))
        criterion, results = nn.BCELoss(), []
        torch.manual_seed(1)
        for _ in range(2):
            net_d.zero_grad()
            label = torch.full((2,), 1.0)
            error_real = criterion(run_d(torch.randn(2, _NC, 64, 64)), label)
            error_real.backward()
            fake = run_g(torch.randn(2, _NZ, 1, 1))
            label.fill_(0.0)
            error_fake = criterion(run_d(fake.detach()), label)
            error_fake.backward()
            optimizer_d.step()
            net_g.zero_grad()
            label.fill_(1.0)
            error_g = criterion(run_d(fake), label)
            error_g.backward()
            optimizer_g.step()
            results += [error_real.detach(), error_fake.detach(), error_g.detach()]
        return results + [p.detach() for p in [*net_g.parameters(), *net_d.parameters()]] + [
            b for b in [*net_g.buffers(), *net_d.buffers()] if b.is_floating_point()]
    want = train(copy.deepcopy(generator), copy.deepcopy(discriminator), compiled=False)
    got = train(generator, discriminator, compiled=True)
    _assert_close(got, want)


# ---- word_language_model/model.py and main.py ----

class _RNNModel(nn.Module):
    def __init__(self, rnn_type, ntoken, ninp, nhid, nlayers, tie_weights=False):
        super().__init__()
        self.ntoken, self.drop = ntoken, nn.Dropout(0.0)
        self.encoder = nn.Embedding(ntoken, ninp)
        if rnn_type in ('LSTM', 'GRU'):
            self.rnn = getattr(nn, rnn_type)(ninp, nhid, nlayers)
        else:
            nonlinearity = {'RNN_TANH': 'tanh', 'RNN_RELU': 'relu'}[rnn_type]
            self.rnn = nn.RNN(ninp, nhid, nlayers, nonlinearity=nonlinearity)
        self.decoder = nn.Linear(nhid, ntoken)
        if tie_weights:
            self.decoder.weight = self.encoder.weight
        nn.init.uniform_(self.encoder.weight, -0.1, 0.1)
        nn.init.zeros_(self.decoder.bias)
        nn.init.uniform_(self.decoder.weight, -0.1, 0.1)
        self.rnn_type, self.nhid, self.nlayers = rnn_type, nhid, nlayers

    def forward(self, input, hidden):
        output, hidden = self.rnn(self.drop(self.encoder(input)), hidden)
        decoded = self.decoder(self.drop(output)).view(-1, self.ntoken)
        return F.log_softmax(decoded, dim=1), hidden

    def init_hidden(self, bsz):
        weight = next(self.parameters())
        if self.rnn_type == 'LSTM':
            return (weight.new_zeros(self.nlayers, bsz, self.nhid),
                    weight.new_zeros(self.nlayers, bsz, self.nhid))
        return weight.new_zeros(self.nlayers, bsz, self.nhid)


def _repackage_hidden(h):
    return h.detach() if isinstance(h, torch.Tensor) else tuple(_repackage_hidden(v) for v in h)


@pytest.mark.parametrize("rnn_type", ["LSTM", "RNN_TANH"])
def test_word_language_model_rnn_training_loop(rnn_type):
    """main.py's train(): the hidden state carried across batches, clip_grad_norm_, and the
    update by p.data.add_. Dynamo compiles nothing of this forward unless allow_rnn."""
    torch.manual_seed(0)
    ntokens, bptt, batch = 20, 4, 3
    train_data = torch.randint(0, ntokens, (13, batch))
    base = _RNNModel(rnn_type, ntokens, 8, 8, 1, tie_weights=True)

    def train(model, compiled):
        run = torch.compile(model, backend="kiln", **WHOLE) if compiled else model
        hidden, results = model.init_hidden(batch), []
        for i in range(0, train_data.size(0) - 1, bptt):
            seq_len = min(bptt, len(train_data) - 1 - i)
            data, targets = train_data[i:i + seq_len], train_data[i + 1:i + 1 + seq_len].view(-1)
            model.zero_grad()
            output, hidden = run(data, _repackage_hidden(hidden))
            loss = F.nll_loss(output, targets)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 0.25)
            for p in model.parameters():
                p.data.add_(p.grad, alpha=-20)
            results.append(loss.detach())
        return results + [p.detach() for p in model.parameters()]
    with torch._dynamo.config.patch(allow_rnn=True):
        want = train(copy.deepcopy(base), compiled=False)
        got = train(base, compiled=True)
    _assert_close(got, want)


class _PositionalEncoding(nn.Module):
    def __init__(self, d_model, max_len=64):
        super().__init__()
        pe = torch.zeros(max_len, d_model)
        position = torch.arange(0, max_len, dtype=torch.float).unsqueeze(1)
        div_term = torch.exp(torch.arange(0, d_model, 2).float() * (-math.log(10000.0) / d_model))
        pe[:, 0::2] = torch.sin(position * div_term)
        pe[:, 1::2] = torch.cos(position * div_term)
        self.register_buffer('pe', pe.unsqueeze(0).transpose(0, 1))
        self.dropout = nn.Dropout(0.0)

    def forward(self, x):
        return self.dropout(x + self.pe[:x.size(0), :])


class _TransformerModel(nn.Transformer):
    def __init__(self, ntoken, ninp, nhead, nhid, nlayers):
        super().__init__(d_model=ninp, nhead=nhead, dim_feedforward=nhid,
                         num_encoder_layers=nlayers, dropout=0.0)
        self.src_mask, self.ninp = None, ninp
        self.pos_encoder = _PositionalEncoding(ninp)
        self.input_emb = nn.Embedding(ntoken, ninp)
        self.decoder = nn.Linear(ninp, ntoken)

    def forward(self, src):
        if self.src_mask is None or self.src_mask.size(0) != len(src):
            self.src_mask = torch.log(torch.tril(torch.ones(len(src), len(src))))
        src = self.pos_encoder(self.input_emb(src) * math.sqrt(self.ninp))
        return F.log_softmax(self.decoder(self.encoder(src, mask=self.src_mask)), dim=-1)


def test_word_language_model_transformer():
    """The mask's causality check (.all() read as a bool) is a graph break in Dynamo."""
    torch.manual_seed(0)
    model = _TransformerModel(20, 8, 2, 16, 1)
    data, targets = torch.randint(0, 20, (5, 2)), torch.randint(0, 20, (10,))
    _check(model, (data,), lambda out: F.nll_loss(out.view(-1, 20), targets), _sgd, steps=3)


# ---- super_resolution/model.py ----

class _SuperResolutionNet(nn.Module):
    def __init__(self, upscale_factor):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 16, (5, 5), (1, 1), (2, 2))
        self.conv2 = nn.Conv2d(16, 16, (3, 3), (1, 1), (1, 1))
        self.conv3 = nn.Conv2d(16, 8, (3, 3), (1, 1), (1, 1))
        self.conv4 = nn.Conv2d(8, upscale_factor ** 2, (3, 3), (1, 1), (1, 1))
        self.pixel_shuffle = nn.PixelShuffle(upscale_factor)
        for conv in (self.conv1, self.conv2, self.conv3):
            nn.init.orthogonal_(conv.weight, nn.init.calculate_gain('relu'))
        nn.init.orthogonal_(self.conv4.weight)

    def forward(self, x):
        x = F.relu(self.conv3(F.relu(self.conv2(F.relu(self.conv1(x))))))
        return self.pixel_shuffle(self.conv4(x))


def test_super_resolution_with_mse_and_adam_dynamic():
    torch.manual_seed(0)
    x, target = torch.randn(2, 1, 12, 12), torch.randn(2, 1, 36, 36)
    _check(_SuperResolutionNet(3), (x,), lambda out: F.mse_loss(out, target), _adam,
           dynamic=True)


# ---- fast_neural_style/neural_style/transformer_net.py and utils.py ----

class _ConvLayer(nn.Module):
    def __init__(self, cin, cout, kernel_size, stride, upsample=None):
        super().__init__()
        self.upsample = upsample
        self.reflection_pad = nn.ReflectionPad2d(kernel_size // 2)
        self.conv2d = nn.Conv2d(cin, cout, kernel_size, stride)

    def forward(self, x):
        if self.upsample:
            x = F.interpolate(x, mode='nearest', scale_factor=self.upsample)
        return self.conv2d(self.reflection_pad(x))


class _ResidualBlock(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.conv1, self.conv2 = _ConvLayer(channels, channels, 3, 1), \
            _ConvLayer(channels, channels, 3, 1)
        self.in1 = nn.InstanceNorm2d(channels, affine=True)
        self.in2 = nn.InstanceNorm2d(channels, affine=True)

    def forward(self, x):
        return self.in2(self.conv2(F.relu(self.in1(self.conv1(x))))) + x


class _TransformerNet(nn.Module):
    """Channels 32/64/128 -> 4/8/16, five residual blocks -> one."""

    def __init__(self):
        super().__init__()
        self.conv1, self.in1 = _ConvLayer(3, 4, 9, 1), nn.InstanceNorm2d(4, affine=True)
        self.conv2, self.in2 = _ConvLayer(4, 8, 3, 2), nn.InstanceNorm2d(8, affine=True)
        self.conv3, self.in3 = _ConvLayer(8, 16, 3, 2), nn.InstanceNorm2d(16, affine=True)
        self.res = nn.Sequential(_ResidualBlock(16))
        self.deconv1 = _ConvLayer(16, 8, 3, 1, upsample=2)
        self.in4 = nn.InstanceNorm2d(8, affine=True)
        self.deconv2 = _ConvLayer(8, 4, 3, 1, upsample=2)
        self.in5 = nn.InstanceNorm2d(4, affine=True)
        self.deconv3 = _ConvLayer(4, 3, 9, 1)

    def forward(self, x):
        y = F.relu(self.in1(self.conv1(x)))
        y = F.relu(self.in3(self.conv3(F.relu(self.in2(self.conv2(y))))))
        y = F.relu(self.in4(self.deconv1(self.res(y))))
        return self.deconv3(F.relu(self.in5(self.deconv2(y))))


def _gram_matrix(y):
    (b, ch, h, w) = y.size()
    features = y.view(b, ch, w * h)
    return features.bmm(features.transpose(1, 2)) / (ch * h * w)


def test_fast_neural_style_transformer_net_with_a_gram_loss():
    torch.manual_seed(0)
    x = torch.rand(1, 3, 16, 16)  # not 0-255: that loss's SGD steps diverge, eager's too
    _check(_TransformerNet(), (x,),
           lambda y: F.mse_loss(_gram_matrix(y), _gram_matrix(x)) + F.mse_loss(y, x), _sgd)


# ---- siamese_network/main.py (its resnet18 replaced by a small stand-in: no torchvision) ----

class _SiameseNetwork(nn.Module):
    def __init__(self):
        super().__init__()
        self.resnet = nn.Sequential(
            nn.Conv2d(1, 8, 7, 2, 3, bias=False), nn.BatchNorm2d(8), nn.ReLU(inplace=True),
            nn.MaxPool2d(3, 2, 1), nn.Conv2d(8, 16, 3, 2, 1, bias=False), nn.BatchNorm2d(16),
            nn.ReLU(inplace=True), nn.AdaptiveAvgPool2d((1, 1)))
        self.fc = nn.Sequential(nn.Linear(32, 64), nn.ReLU(inplace=True), nn.Linear(64, 1))
        for linear in (self.fc[0], self.fc[2]):
            torch.nn.init.xavier_uniform_(linear.weight)
            linear.bias.data.fill_(0.01)

    def forward_once(self, x):
        output = self.resnet(x)
        return output.view(output.size()[0], -1)

    def forward(self, input1, input2):
        output = torch.cat((self.forward_once(input1), self.forward_once(input2)), 1)
        return torch.sigmoid(self.fc(output))


def test_siamese_network_with_bce_and_adadelta():
    torch.manual_seed(0)
    inputs = torch.randn(4, 1, 28, 28), torch.randn(4, 1, 28, 28)
    target = torch.tensor([1.0, 0.0, 1.0, 0.0])
    _check(_SiameseNetwork(), inputs,
           lambda out: F.binary_cross_entropy(out.squeeze(), target),
           lambda m: torch.optim.Adadelta(m.parameters(), lr=1.0))


# ---- time_sequence_prediction/train.py ----

class _Sequence(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm1, self.lstm2 = nn.LSTMCell(1, 11), nn.LSTMCell(11, 11)
        self.linear = nn.Linear(11, 1)

    def forward(self, input, future=0):
        outputs = []
        h_t = torch.zeros(input.size(0), 11, dtype=torch.double)
        c_t = torch.zeros(input.size(0), 11, dtype=torch.double)
        h_t2 = torch.zeros(input.size(0), 11, dtype=torch.double)
        c_t2 = torch.zeros(input.size(0), 11, dtype=torch.double)
        for input_t in input.split(1, dim=1):
            h_t, c_t = self.lstm1(input_t, (h_t, c_t))
            h_t2, c_t2 = self.lstm2(h_t, (h_t2, c_t2))
            output = self.linear(h_t2)
            outputs += [output]
        for _ in range(future):
            h_t, c_t = self.lstm1(output, (h_t, c_t))
            h_t2, c_t2 = self.lstm2(h_t, (h_t2, c_t2))
            output = self.linear(h_t2)
            outputs += [output]
        return torch.cat(outputs, dim=1)


def test_time_sequence_prediction_lstm_cells_with_lbfgs():
    """float64, the loop over time steps unrolled; LBFGS calls the closure several times."""
    torch.manual_seed(0)
    steps = torch.arange(2 * 3, dtype=torch.double).view(2, 3) / 3
    x, target = torch.sin(steps), torch.cos(steps)
    base = _Sequence().double()

    def train(seq, compiled):
        run = torch.compile(seq, backend="kiln", **WHOLE) if compiled else seq
        optimizer = torch.optim.LBFGS(seq.parameters(), lr=0.8, max_iter=4)

        def closure():
            optimizer.zero_grad()
            loss = F.mse_loss(run(x), target)
            loss.backward()
            return loss
        loss = optimizer.step(closure).detach()
        with torch.no_grad():
            prediction = run(x[:1], future=2)
        return [loss, prediction] + [p.detach() for p in seq.parameters()]
    want = train(copy.deepcopy(base), compiled=False)
    got = train(base, compiled=True)
    _assert_close(got, want, tolerance=1e-9)


# ---- reinforcement_learning/reinforce.py and actor_critic.py ----

class _Policy(nn.Module):
    def __init__(self):
        super().__init__()
        self.affine1, self.dropout = nn.Linear(4, 32), nn.Dropout(p=0.6)
        self.affine2 = nn.Linear(32, 2)

    def forward(self, x):
        return F.softmax(self.affine2(F.relu(self.dropout(self.affine1(x)))), dim=1)


class _ActorCritic(nn.Module):
    def __init__(self):
        super().__init__()
        self.affine1 = nn.Linear(4, 32)
        self.action_head, self.value_head = nn.Linear(32, 2), nn.Linear(32, 1)

    def forward(self, x):
        x = F.relu(self.affine1(x))
        return F.softmax(self.action_head(x), dim=-1), self.value_head(x)


def test_reinforcement_learning_episodes():
    """select_action per step (Categorical over the compiled policy's probabilities), then
    finish_episode's one loss over the episode, as the two scripts do; eval: no dropout."""
    torch.manual_seed(0)
    states, rewards = torch.randn(6, 4), torch.tensor([1.0, 0.0, 1.0, 1.0, 0.0, 1.0])
    returns = (rewards - rewards.mean()) / (rewards.std() + 1e-7)
    bases = _Policy().eval(), _ActorCritic()

    def episode(policy, critic, compiled):
        run_policy = torch.compile(policy, backend="kiln", **WHOLE) if compiled else policy
        run_critic = torch.compile(critic, backend="kiln", **WHOLE) if compiled else critic
        optimizers = [torch.optim.Adam(m.parameters(), lr=1e-2) for m in (policy, critic)]
        policy_loss, actor_losses, value_losses = [], [], []
        for t in range(len(states)):
            action = torch.tensor(t % 2)
            policy_loss.append(-Categorical(run_policy(states[t:t + 1])).log_prob(action[None])
                               * returns[t])
            probs, value = run_critic(states[t])
            advantage = returns[t] - value.item()
            actor_losses.append(-Categorical(probs).log_prob(action) * advantage)
            value_losses.append(F.smooth_l1_loss(value, returns[t:t + 1]))
        losses = [torch.cat(policy_loss).sum(),
                  torch.stack(actor_losses).sum() + torch.stack(value_losses).sum()]
        for optimizer, loss in zip(optimizers, losses):
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        return [loss.detach() for loss in losses] + [
            p.detach() for m in (policy, critic) for p in m.parameters()]
    want = episode(*copy.deepcopy(bases), compiled=False)
    got = episode(*bases, compiled=True)
    _assert_close(got, want)


# ---- gcn/main.py and gat/main.py (a dense normalised adjacency: Dynamo runs sparse ----
# ---- tensors' frames in eager PyTorch) ----

class _GraphConv(nn.Module):
    def __init__(self, input_dim, output_dim):
        super().__init__()
        self.kernel = nn.Parameter(torch.empty(input_dim, output_dim))
        nn.init.xavier_normal_(self.kernel)
        self.bias = nn.Parameter(torch.zeros(output_dim))

    def forward(self, input_tensor, adj_mat):
        return torch.spmm(adj_mat, torch.mm(input_tensor, self.kernel)) + self.bias


class _GCN(nn.Module):
    def __init__(self, input_dim, hidden_dim, output_dim):
        super().__init__()
        self.gc1, self.gc2 = _GraphConv(input_dim, hidden_dim), _GraphConv(hidden_dim, output_dim)
        self.dropout = nn.Dropout(0.0)

    def forward(self, input_tensor, adj_mat):
        x = self.dropout(F.relu(self.gc1(input_tensor, adj_mat)))
        return F.log_softmax(self.gc2(x, adj_mat), dim=1)


class _GraphAttentionLayer(nn.Module):
    def __init__(self, in_features, out_features, n_heads, concat):
        super().__init__()
        self.n_heads, self.concat = n_heads, concat
        self.n_hidden = out_features // n_heads if concat else out_features
        self.out_features = out_features
        self.W = nn.Parameter(torch.empty(size=(in_features, self.n_hidden * n_heads)))
        self.a = nn.Parameter(torch.empty(size=(n_heads, 2 * self.n_hidden, 1)))
        nn.init.xavier_normal_(self.W)
        nn.init.xavier_normal_(self.a)

    def forward(self, h, adj_mat):
        n_nodes = h.shape[0]
        h_transformed = F.dropout(torch.mm(h, self.W), 0.0, training=self.training)
        h_transformed = h_transformed.view(n_nodes, self.n_heads, self.n_hidden).permute(1, 0, 2)
        source_scores = torch.matmul(h_transformed, self.a[:, :self.n_hidden, :])
        target_scores = torch.matmul(h_transformed, self.a[:, self.n_hidden:, :])
        e = F.leaky_relu(source_scores + target_scores.mT, 0.2)
        e = torch.where(adj_mat > 0, e, -9e16 * torch.ones_like(e))
        attention = F.dropout(F.softmax(e, dim=-1), 0.0, training=self.training)
        h_prime = torch.matmul(attention, h_transformed)
        if self.concat:
            return h_prime.permute(1, 0, 2).contiguous().view(n_nodes, self.out_features)
        return h_prime.mean(dim=0)


class _GAT(nn.Module):
    def __init__(self, in_features, n_hidden, n_heads, num_classes, concat):
        super().__init__()
        self.gat1 = _GraphAttentionLayer(in_features, n_hidden, n_heads, concat)
        self.gat2 = _GraphAttentionLayer(n_hidden, num_classes, 1, False)

    def forward(self, input_tensor, adj_mat):
        return F.log_softmax(self.gat2(F.elu(self.gat1(input_tensor, adj_mat)), adj_mat), dim=1)


def _normalised_adjacency(nodes):
    adjacency = (torch.rand(nodes, nodes) < 0.15).float()
    adjacency = ((adjacency + adjacency.T + torch.eye(nodes)) > 0).float()
    degree = adjacency.sum(1).pow(-0.5)
    return degree[:, None] * adjacency * degree[None, :]


@pytest.mark.parametrize("network", ["gcn", "gat_concat"])
def test_graph_networks_with_masked_nll_and_weight_decay(network):
    torch.manual_seed(0)
    nodes = 20
    x, adjacency = torch.rand(nodes, 12), _normalised_adjacency(nodes)
    labels, train_nodes = torch.randint(0, 4, (nodes,)), torch.randperm(nodes)[:12]
    model = {"gcn": lambda: _GCN(12, 8, 4), "gat": lambda: _GAT(12, 8, 2, 4, False),
             "gat_concat": lambda: _GAT(12, 8, 2, 4, True)}[network]()
    _check(model, (x, adjacency), lambda out: F.nll_loss(out[train_nodes], labels[train_nodes]),
           lambda m: torch.optim.Adam(m.parameters(), lr=0.01, weight_decay=5e-4))


# ---- mnist_rnn/main.py ----

class _MnistRNN(nn.Module):
    """Images of side 8, not 28: the LSTM's steps are unrolled (28 took 18 s to compile)."""

    def __init__(self, side=8):
        super().__init__()
        self.side = side
        self.rnn = nn.LSTM(input_size=side, hidden_size=16, batch_first=True)
        self.batchnorm = nn.BatchNorm1d(16)
        self.fc1, self.fc2 = nn.Linear(16, 8), nn.Linear(8, 10)

    def forward(self, input):
        output, hidden = self.rnn(input.reshape(-1, self.side, self.side))
        output = self.batchnorm(output[:, -1, :])
        return F.log_softmax(self.fc2(F.relu(self.fc1(output))), dim=1)


def test_mnist_rnn_lstm_and_batch_norm():
    """Dynamo compiles nothing of this forward unless allow_rnn (nn.LSTM's frame is skipped)."""
    torch.manual_seed(0)
    target = torch.randint(0, 10, (4,))
    with torch._dynamo.config.patch(allow_rnn=True):
        _check(_MnistRNN(), (torch.randn(4, 1, 8, 8),), lambda out: F.nll_loss(out, target),
               lambda m: torch.optim.Adadelta(m.parameters(), lr=1.0))


# ---- regression/main.py ----

def test_regression_polynomial_fit_with_manual_updates():
    torch.manual_seed(0)
    w_target, b_target = torch.randn(4, 1) * 5, torch.randn(1) * 5
    base = nn.Linear(4, 1)

    def fit(fc, compiled):
        run = torch.compile(fc, backend="kiln", **WHOLE) if compiled else fc
        torch.manual_seed(1)
        losses = []
        for _ in range(8):
            x = torch.randn(32).unsqueeze(1)
            x = torch.cat([x ** i for i in range(1, 5)], 1)
            y = x.mm(w_target) + b_target.item()
            fc.zero_grad()
            output = F.smooth_l1_loss(run(x), y)
            losses.append(output.item())
            output.backward()
            for param in fc.parameters():
                param.data.add_(-0.1 * param.grad)
        return [torch.tensor(losses)] + [p.detach() for p in fc.parameters()]
    want = fit(copy.deepcopy(base), compiled=False)
    got = fit(base, compiled=True)
    _assert_close(got, want)


# ---- distributed/minGPT-ddp/mingpt/model.py (one process) ----

class _Block(nn.Module):
    def __init__(self, n_embd, n_head, block_size):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(n_embd), nn.LayerNorm(n_embd)
        self.c_proj = nn.Linear(n_embd, n_embd)
        self.register_buffer("mask", torch.tril(torch.ones(block_size, block_size))
                             .view(1, 1, block_size, block_size))
        self.attn = nn.MultiheadAttention(n_embd, n_head, dropout=0.0, batch_first=True)
        self.mlp = nn.Sequential(nn.Linear(n_embd, 4 * n_embd), nn.GELU(),
                                 nn.Linear(4 * n_embd, n_embd))

    def forward(self, x):
        seq_size = x.size(1)
        y = self.ln1(x)
        y = self.attn(y, y, y, attn_mask=self.mask[0, 0, :seq_size, :seq_size])[0]
        x = x + self.c_proj(y)
        return x + self.mlp(self.ln2(x))


class _GPT(nn.Module):
    def __init__(self, vocab_size=30, n_embd=16, n_head=2, block_size=8):
        super().__init__()
        self.tok_emb = nn.Embedding(vocab_size, n_embd)
        self.pos_emb = nn.Parameter(torch.randn(1, block_size, n_embd) * 0.02)
        self.blocks = nn.Sequential(_Block(n_embd, n_head, block_size))
        self.ln_f = nn.LayerNorm(n_embd)
        self.head = nn.Linear(n_embd, vocab_size, bias=False)

    def forward(self, idx, targets):
        x = self.tok_emb(idx) + self.pos_emb[:, :idx.size(1), :]
        logits = self.head(self.ln_f(self.blocks(x)))
        loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1),
                               ignore_index=-1)
        return logits, loss


def test_min_gpt_with_adamw_in_reduce_overhead_mode():
    torch.manual_seed(0)
    idx, targets = torch.randint(0, 30, (2, 6)), torch.randint(0, 30, (2, 6))
    targets[0, 0] = -1
    _check(_GPT(), (idx, targets), lambda out: out[1],
           lambda m: torch.optim.AdamW(m.parameters(), lr=3e-4, betas=(0.9, 0.95),
                                       weight_decay=0.1),
           options={"unsupported_ops": "error", "mode": "reduce-overhead"})
