// Stopping a running COIN solve from another thread (see stop.cpp).

#ifndef GAVEL_STOP_H
#define GAVEL_STOP_H

#ifdef __cplusplus
extern "C" {
#endif

typedef struct gavel_flag gavel_flag;

gavel_flag *gavel_flag_new(void);
void gavel_flag_free(gavel_flag *f);
void gavel_flag_raise(gavel_flag *f);
void gavel_flag_reset(gavel_flag *f);
int gavel_flag_acted(gavel_flag *f);

// model is a Clp_Simplex *; a Cbc_Model * for gavel_cbc_watch.
void gavel_clp_watch(void *model, gavel_flag *f);
void gavel_cbc_watch(void *model, gavel_flag *f);

#ifdef __cplusplus
}
#endif

#endif
