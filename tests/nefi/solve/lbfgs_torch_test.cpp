#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "nefi/solve/lbfgs.h"

// nefi::Lbfgs against torch.optim.LBFGS(line_search_fn="strong_wolfe"), the
// optimizer the reference's lbfgs runs, iterate for iterate in f64: the
// iterates after each step() and the cumulative evaluation and iteration
// counts (the line search's path shows in them). torch's numbers were
// computed once with torch 1.13 (Debian's) by this script and pasted below:
// clang-format off
//
// # torch.optim.LBFGS(line_search_fn="strong_wolfe") iterates in f64, printed as C++ initialisers.
// import torch
// torch.set_default_dtype(torch.float64)
//
// def rosenbrock(x):
//     return (1 - x[0]) ** 2 + 100 * (x[1] - x[0] ** 2) ** 2
//
// n = 10
// A = torch.tensor([[(1.0 + i) if i == j else 0.3 / (1 + abs(i - j))
//                    for j in range(n)] for i in range(n)])
// b = torch.tensor([(-1.0) ** i * (0.5 + 0.1 * i) for i in range(n)])
// def quadratic(x):
//     return 0.5 * x @ (A @ x) - b @ x
//
// def run(f, x0, steps, **kw):
//     x = torch.tensor(x0, requires_grad=True)
//     opt = torch.optim.LBFGS([x], line_search_fn="strong_wolfe", **kw)
//     def closure():
//         opt.zero_grad()
//         v = f(x)
//         v.backward()
//         return v
//     rows = []
//     for _ in range(steps):
//         opt.step(closure)
//         st = opt.state[opt._params[0]]
//         rows.append((x.detach().tolist(), st["func_evals"], st["n_iter"]))
//     return rows
//
// def show(name, rows):
//     print(f"// {name}: {{x after the step..., cumulative evaluations, cumulative iterations}}")
//     for xs, ev, it in rows:
//         print("    {{" + ", ".join(repr(v) for v in xs) + f"}}, {ev}, {it}}},")
//
// print("// torch", torch.__version__)
// show("rosenbrock lr 1 history 20 max_iter 1",
//      run(rosenbrock, [-1.2, 1.0], 36, lr=1, history_size=20, max_iter=1))
// show("quadratic lr 0.5 history 5 max_iter 1",
//      run(quadratic, [0.0] * n, 14, lr=0.5, history_size=5, max_iter=1))
// show("rosenbrock lr 1 history 4 max_iter 6",
//      run(rosenbrock, [-1.2, 1.0], 5, lr=1, history_size=4, max_iter=6))
// show("rosenbrock from (3, -3) lr 5 history 10 tolerance_change 0.1",
//      run(rosenbrock, [3.0, -3.0], 2, lr=5, history_size=10, tolerance_change=0.1))
// clang-format on

namespace {

using Vec = std::vector<double>;

struct TorchRow {
  Vec x;
  int evaluations, iterations;
};

double rosenbrock(const Vec& x, Vec& g) {
  const double a = 1 - x[0], b = x[1] - x[0] * x[0];
  g = {-2 * a - 400 * x[0] * b, 200 * b};
  return a * a + 100 * b * b;
}

// The script's quadratic: ½ xᵀAx − bᵀx, A_ii = 1 + i, A_ij = 0.3 / (1 + |i − j|).
double quadratic(const Vec& x, Vec& g) {
  const int n = 10;
  g.assign(n, 0.0);
  double f = 0;
  for (int i = 0; i < n; ++i) {
    double ax = 0;
    for (int j = 0; j < n; ++j) ax += (i == j ? 1.0 + i : 0.3 / (1 + std::abs(i - j))) * x[j];
    const double b = (i % 2 ? -1.0 : 1.0) * (0.5 + 0.1 * i);
    g[i] = ax - b;
    f += 0.5 * x[i] * ax - b * x[i];
  }
  return f;
}

void expect_torch_iterates(const nefi::Lbfgs::Objective& f, Vec x, double lr, int history,
                           int max_iter, const std::vector<TorchRow>& rows,
                           double tolerance_change = 1e-9) {
  nefi::LbfgsOptions o;  // torch's tolerances: 1e-7 on the gradient, 1e-9 on changes
  o.history = history;
  o.max_iter = max_iter;
  o.tolerance_change = tolerance_change;
  nefi::Lbfgs opt(o);
  for (size_t k = 0; k < rows.size(); ++k) {
    opt.step(f, x, lr);
    for (size_t i = 0; i < x.size(); ++i)
      EXPECT_NEAR(x[i], rows[k].x[i], 1e-10 * std::max(1.0, std::abs(rows[k].x[i])))
          << "step " << k + 1 << ", component " << i;
    EXPECT_EQ(opt.evaluations(), rows[k].evaluations) << "step " << k + 1;
    EXPECT_EQ(opt.iterations(), rows[k].iterations) << "step " << k + 1;
  }
}

// One iteration a step: every iterate, through convergence (the last steps
// stop at the directional-derivative test after one evaluation).
TEST(NefiLbfgsTorch, RosenbrockIterateForIterate) {
  const std::vector<TorchRow> rows = {
      {{-1.0245319303460325, 1.0716196202669255}, 3, 1},
      {{-1.0284565745562346, 1.068187455748677}, 5, 2},
      {{-1.0288795348319695, 1.0655029516848564}, 7, 3},
      {{-1.0276177663827242, 1.0584120782656612}, 9, 4},
      {{-1.0203084803940978, 1.0352769866467468}, 11, 5},
      {{-0.9970310351680055, 0.9755913846740084}, 13, 6},
      {{-0.9431278012083242, 0.8529662725410918}, 15, 7},
      {{-0.8802131649658734, 0.7274772060719978}, 17, 8},
      {{-0.7745797354515831, 0.5476256792320806}, 19, 9},
      {{-0.6657084570888959, 0.41398308319536115}, 21, 10},
      {{-0.5160277728852024, 0.2265458257902353}, 23, 11},
      {{-0.34877876200144664, 0.12519507039453415}, 25, 12},
      {{-0.2560895768966468, 0.03726198161622369}, 29, 13},
      {{-0.17113560906029426, -0.006111200392020753}, 31, 14},
      {{-0.04619019171258308, -0.01801156636469505}, 33, 15},
      {{0.06629731136778556, -0.017627359722663875}, 35, 16},
      {{0.21682779600948238, 0.06691881400560815}, 37, 17},
      {{0.34184236067537654, 0.09925827373850052}, 41, 18},
      {{0.38062264334648777, 0.12491013187293636}, 43, 19},
      {{0.5136224431368508, 0.2558152810317753}, 45, 20},
      {{0.6161737966679104, 0.3544950575966924}, 47, 21},
      {{0.6803460312870351, 0.461205800188304}, 49, 22},
      {{0.7460759093292199, 0.5450068956869693}, 52, 23},
      {{0.7887038200403462, 0.6122685417325044}, 54, 24},
      {{0.834251765682165, 0.6981152654335748}, 56, 25},
      {{0.8926077474569851, 0.7909177737724841}, 59, 26},
      {{0.9160713624543682, 0.8342473675852546}, 61, 27},
      {{0.9452890215102737, 0.8950994053215204}, 63, 28},
      {{0.9768773674819872, 0.9525832436377472}, 66, 29},
      {{0.9866961395800226, 0.9724067870330647}, 68, 30},
      {{0.9949244301959197, 0.9900103526083552}, 70, 31},
      {{1.0014241818074159, 1.0026291765163038}, 72, 32},
      {{0.9998139520065253, 0.9996256094716877}, 74, 33},
      {{0.9999814210791366, 0.9999619651810988}, 76, 34},
      {{0.9999814210791366, 0.9999619651810988}, 77, 35},
      {{0.9999814210791366, 0.9999619651810988}, 78, 36},
  };
  expect_torch_iterates(rosenbrock, {-1.2, 1.0}, 1.0, 20, 1, rows);
}

// lr 0.5 (the first trial step), history 5 < n so old pairs are dropped.
TEST(NefiLbfgsTorch, QuadraticWithAShortHistoryIterateForIterate) {
  const std::vector<TorchRow> rows = {
      {{0.02631578947368421, -0.03157894736842105, 0.03684210526315789, -0.042105263157894736,
        0.04736842105263158, -0.05263157894736842, 0.05789473684210526, -0.06315789473684211,
        0.06842105263157895, -0.07368421052631578},
       2,
       1},
      {{0.0814702630484476, -0.09247119266737032, 0.10146140008075344, -0.10837247769062552,
        0.11396261885812961, -0.11691484006790742, 0.11911600514586505, -0.11799111155584528,
        0.11708143288079151, -0.11122181116151934},
       4,
       2},
      {{0.1483199074902338, -0.158384307544569, 0.16126845888991387, -0.1612990566623701,
        0.1582455782592811, -0.153083860511378, 0.14769679994339252, -0.14147161106199962,
        0.13771568551082147, -0.13420284992817474},
       6,
       3},
      {{0.22560687718765532, -0.2234959248835241, 0.20855440422681876, -0.19554791773840383,
        0.1811678913985935, -0.1697167623485336, 0.1610535239518477, -0.15391192886368102,
        0.14979864416548208, -0.14095956927371192},
       8,
       4},
      {{0.31399641824780355, -0.2825986860113712, 0.23804428750842965, -0.21204133544507223,
        0.1895259814368086, -0.17680327550667724, 0.16560644614442654, -0.15698616071155297,
        0.14935430838479585, -0.15002927128742216},
       10,
       5},
      {{0.41023744322894284, -0.3273912914529612, 0.24920554986800905, -0.21750507821603968,
        0.19234658310877478, -0.1781504145160932, 0.1674712359896953, -0.16150110926689443,
        0.16442732779101452, -0.13056220466813695},
       12,
       6},
      {{0.4821766744765552, -0.35612865169778113, 0.25347034829676257, -0.2197637512826366,
        0.19116157314051324, -0.17788379540444943, 0.1649044712760339, -0.15894711980292092,
        0.1516310136459659, -0.14525134059128736},
       14,
       7},
      {{0.5059094390806198, -0.3603625601437602, 0.25165961896059097, -0.21887949634524662,
        0.18939811666462508, -0.17664129331786785, 0.16338530793261904, -0.156045109295552,
        0.1494739188892513, -0.1435098857336472},
       16,
       8},
      {{0.5258523589721197, -0.35887975093557517, 0.24687362964077708, -0.21611790565703345,
        0.18627130657341387, -0.17456444323733275, 0.16142395319833797, -0.15704724891493668,
        0.1496125455028052, -0.14409866936212387},
       18,
       9},
      {{0.5346030941841045, -0.35389823576195506, 0.24294608569849843, -0.21456549019358395,
        0.1853131718990998, -0.1742926685315513, 0.16141049891896678, -0.152463672695056,
        0.14560002930722282, -0.14099235787612013},
       20,
       10},
      {{0.537906148036454, -0.3531063559575475, 0.24191876414928068, -0.2141128792027397,
        0.18474077857146326, -0.1738734276809224, 0.16082379487795836, -0.15313626698731914,
        0.14646599405348765, -0.14161990988293502},
       22,
       11},
      {{0.5393234494082626, -0.3522845135229584, 0.2413260948395406, -0.21395731140479082,
        0.1844889114630029, -0.1736819689703252, 0.1605636504853912, -0.15366084106323286,
        0.14683262809812986, -0.14188592443679646},
       24,
       12},
      {{0.5399949675001108, -0.351660187581884, 0.24101672582983955, -0.21392367750015553,
        0.18439572502657983, -0.17360991002007647, 0.16046211522679388, -0.1538458100568724,
        0.14711584676861716, -0.14204576489460005},
       26,
       13},
      {{0.5403041491289752, -0.35125293799437635, 0.24087242323744304, -0.2139371622869967,
        0.18436282048254587, -0.17359022843232738, 0.1604095457097916, -0.15400516350226715,
        0.14719977551814867, -0.14212256879486745},
       28,
       14},
  };
  expect_torch_iterates(quadratic, Vec(10, 0.0), 0.5, 5, 1, rows);
}

// Six iterations a step and torch's evaluation cap (max_iter · 5 / 4 = 7):
// the cap ends each step early, and the state carries into the next.
TEST(NefiLbfgsTorch, RosenbrockStepsEndAtTheEvaluationCap) {
  const std::vector<TorchRow> rows = {
      {{-1.0203084803940978, 1.0352769866467468}, 7, 5},
      {{-0.4643938779234163, 0.1844816641395314}, 15, 11},
      {{0.12507457394768795, -0.007802139217653345}, 23, 16},
      {{0.4982220627255766, 0.23995760326651283}, 30, 21},
      {{0.900666683460128, 0.8052495728567816}, 38, 26},
  };
  expect_torch_iterates(rosenbrock, {-1.2, 1.0}, 1.0, 4, 6, rows);
}

// A coarse tolerance_change ends the step early (the loss-change stop), but
// the line search keeps its own 1e-9 bracket tolerance, as torch's step()
// calls it: passing 0.1 to it too took 10 evaluations, not torch's 11, and
// ended elsewhere.
TEST(NefiLbfgsTorch, ToleranceChangeDoesNotReachTheLineSearch) {
  const std::vector<TorchRow> rows = {
      {{0.34505837404218676, 0.115722999747139}, 11, 6},
      {{0.34505837404218676, 0.115722999747139}, 12, 7},
  };
  expect_torch_iterates(rosenbrock, {3.0, -3.0}, 5.0, 10, 20, rows, 0.1);
}

}  // namespace
