//go:build cgo

// An event handler that stops a running CLP solve once a flag is raised from another
// thread (a cancelled context; see stoppable and watch in coin.go).
//
// CLP's barrier runs on a ClpInterior that borrows the (presolved) model, copying its
// iteration limit when it starts: an iteration limit set on the given model once the solve
// has begun does not reach it. It copies the model's event handler (clone()), and the clones
// keep the pointer to the flag. CLP calls its handler at the end of every simplex and barrier
// iteration (ClpEventHandler::endOfIteration; in 1.17.6's ClpPredictorCorrector::solve right
// after the iteration's log line) and stops when it answers 0: status 5, secondary 100.
//
// Until the flag is raised the handler answers as COIN's default ClpEventHandler does: the
// solves of lp's tests, policy's and rounds' take the same iterations to the same results
// with it.
//
// Coin_C_defines.h declares the C interface's model struct for C++ code (CLP_EXTERN_C): the
// ClpSimplex behind a Clp_Simplex.

#define CLP_EXTERN_C
#include <atomic>
#include "ClpEventHandler.hpp"
#include "ClpSimplex.hpp"
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
    if (e == endOfIteration && flag_->raised.load(std::memory_order_relaxed)) {
      flag_->acted.store(1);
      return 0; // stop: status 5 (stopped by event handler)
    }
    return ClpEventHandler::event(e);
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
