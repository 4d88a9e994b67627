/* SPDX-License-Identifier: MIT */
/* main.c: argv to cli.c, nothing else. */
#include "cli.h"

int main(int argc, char **argv)
{
    return wr_cli_main(argc, argv);
}
