// `npm run lint`, run by .ci/run before the tests: typescript-eslint's recommended rules. The shape of
// src/ and lab/ (no import cycle, no product module importing the lab, the api as a floor) is
// .dependency-cruiser.cjs's, which counts type-only imports (eslint-plugin-import's no-cycle skips them).
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['dist/**', 'build/**', 'node_modules/**', 'native/**', 'helm/**', 'bench-results/**', '**/*.js', '**/*.mjs'] },
  ...tseslint.configs.recommended,
  {
    files: ['src/**/*.ts', 'lab/**/*.ts', 'test/**/*.ts'],
    rules: {
      // `_name` is left out on purpose (a property dropped by destructuring, an argument a signature needs).
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_', destructuredArrayIgnorePattern: '^_', ignoreRestSiblings: true },
      ],
      // require() is how the CLI loads a command's modules only when it runs, and how the binding is found.
      '@typescript-eslint/no-require-imports': 'off',
    },
  },
  {
    // Tests build wrong documents on purpose: a mutable `any` fixture is how a field gets a wrong type.
    files: ['test/**/*.ts'],
    rules: { '@typescript-eslint/no-explicit-any': 'off' },
  },
);
