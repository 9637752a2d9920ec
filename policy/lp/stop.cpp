//go:build cgo

// Event handlers that stop a running CLP or CBC solve once a flag is raised from another
// thread (a cancelled context; see stoppable and watch in coin.go).
//
// CLP's barrier runs on a ClpInterior that borrows the (presolved) model, copying its
// iteration limit when it starts, and CBC's branch and bound (CbcMain1) on a copy of the
// CbcModel it is given: an iteration limit set on the given model once the solve has begun
// reaches neither. Both copy the model's event handler (clone()), and the clones keep the
// pointer to the flag. CLP calls its handler at the end of every simplex and barrier
// iteration (ClpEventHandler::endOfIteration; in 1.17.6's ClpPredictorCorrector::solve right
// after the iteration's log line) and stops when it answers 0: status 5, secondary 100. CBC
// calls its handler at every node and at points of its root work (cut passes, heuristics,
// solutions) and stops when it answers stop: status 5, secondary 5.
//
// Until the flag is raised the handlers answer as COIN's defaults do (a CLP model has a
// ClpEventHandler; a CBC model none, which is a CbcEventHandler answering noAction): the
// solves of lp's tests, policy's and rounds' take the same iterations and nodes to the same
// results with them.
//
// Coin_C_defines.h declares the C interfaces' model structs for C++ code (CLP_EXTERN_C,
// CBC_EXTERN_C): the ClpSimplex and CbcModel behind a Clp_Simplex and a Cbc_Model.

#define CLP_EXTERN_C
#define CBC_EXTERN_C
#include <atomic>
#include <string>
#include <vector>
#include "CbcEventHandler.hpp"
#include "CbcModel.hpp"
#include "ClpEventHandler.hpp"
#include "ClpSimplex.hpp"
class CbcSolverUsefulData;    // in Cbc_Model, as pointers only
class OsiClpSolverInterface;
#include "Coin_C_defines.h"
#include "stop.h"

struct gavel_flag {
  std::atomic<int> raised; // set by gavel_flag_raise, from any thread
  std::atomic<int> acted;  // a handler stopped the solver
};

gavel_flag *gavel_flag_new(void) {
  gavel_flag *f = new gavel_flag;
  f->raised.store(0);
  f->acted.store(0);
  return f;
}
void gavel_flag_free(gavel_flag *f) { delete f; }
void gavel_flag_raise(gavel_flag *f) { f->raised.store(1); }
void gavel_flag_reset(gavel_flag *f) {
  f->raised.store(0);
  f->acted.store(0);
}
int gavel_flag_acted(gavel_flag *f) { return f->acted.load(); }

namespace {

// raisedNow reports whether f is raised, and if so records that a handler acted on it.
bool raisedNow(gavel_flag *f) {
  if (!f->raised.load(std::memory_order_relaxed)) {
    return false;
  }
  f->acted.store(1);
  return true;
}

// clpStop stops CLP at the end of the iteration in progress (simplex or barrier) once its
// flag is raised; otherwise it is COIN's default handler.
class clpStop : public ClpEventHandler {
public:
  clpStop(ClpSimplex *model, gavel_flag *f) : ClpEventHandler(model), flag_(f) {}
  clpStop(const clpStop &o) : ClpEventHandler(o), flag_(o.flag_) {}
  clpStop &operator=(const clpStop &o) {
    ClpEventHandler::operator=(o);
    flag_ = o.flag_;
    return *this;
  }
  ClpEventHandler *clone() const override { return new clpStop(*this); }
  int event(Event e) override {
    if (e == endOfIteration && raisedNow(flag_)) {
      return 0; // stop: status 5 (stopped by event handler)
    }
    return ClpEventHandler::event(e);
  }

private:
  gavel_flag *flag_;
};

// cbcStop stops CBC's branch and bound at its next event (a node, the tree's status, a
// solution) once its flag is raised; otherwise it answers as a default CbcEventHandler.
class cbcStop : public CbcEventHandler {
public:
  cbcStop(CbcModel *model, gavel_flag *f) : CbcEventHandler(model), flag_(f) {}
  cbcStop(const cbcStop &o) : CbcEventHandler(o), flag_(o.flag_) {}
  cbcStop &operator=(const cbcStop &o) {
    CbcEventHandler::operator=(o);
    flag_ = o.flag_;
    return *this;
  }
  CbcEventHandler *clone() const override { return new cbcStop(*this); }
  CbcAction event(CbcEvent e) override {
    return raisedNow(flag_) ? stop : CbcEventHandler::event(e);
  }
  CbcAction event(CbcEvent e, void *data) override {
    return raisedNow(flag_) ? stop : CbcEventHandler::event(e, data);
  }

private:
  gavel_flag *flag_;
};

} // namespace

void gavel_clp_watch(void *model, gavel_flag *f) {
  ClpSimplex *m = static_cast<Clp_Simplex *>(model)->model_;
  clpStop h(m, f);
  m->passInEventHandler(&h); // a clone
}

void gavel_cbc_watch(void *model, gavel_flag *f) {
  Cbc_Model *cm = static_cast<Cbc_Model *>(model);
  cbcStop h(cm->model_, f);
  cm->model_->passInEventHandler(&h); // a clone
}
