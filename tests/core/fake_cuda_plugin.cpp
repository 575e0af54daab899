// A library that looks like the CUDA plugin but is from another build of mri (its version
// string says so): libmri must refuse it before calling anything else in it.
extern "C" __attribute__((visibility("default"))) const char *mri_cuda_plugin_version() { return "1 0.0.0-another-build"; }
extern "C" __attribute__((visibility("default"))) const void *mri_cuda_plugin_backend() { return nullptr; }
