// graphrun's entry point: everything lives in the cli library.
#include "cli/app.h"

int main(int argc, char** argv) { return graphrun::cli::run_app(argc, argv); }
