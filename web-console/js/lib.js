// Written by console-bundle/build.mjs (scripts/build-console.sh): the
// console's bundle of CodeMirror 6 and uPlot, under hashed names that are
// cached for a year. Do not edit; rebuild.
export * from '/console/lib/console-lib-5bc2bc6043a1.js';
export const LIB_CSS = '/console/lib/uplot-df630c6a8d6f.css';
