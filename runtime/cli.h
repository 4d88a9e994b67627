/* SPDX-License-Identifier: MIT */
/* cli.h: the command line (run, repl, explain, --help, --version) and its exit codes. */
#ifndef WR_CLI_H
#define WR_CLI_H

/* Parses argv and runs the command. Returns 0 success, 1 the job failed, 2 usage error. */
int wr_cli_main(int argc, char **argv);

#endif
