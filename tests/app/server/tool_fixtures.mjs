// The functions the tool-call tests call (tools.test.mjs, harmony_tools.test.mjs).
// Bounded strings: a model that never closes a quote by choice still ends its call.
export const weather = {
  type: 'function',
  function: {
    name: 'get_weather',
    description: 'The weather in a city',
    parameters: {
      type: 'object',
      properties: { city: { type: 'string', maxLength: 12 }, unit: { enum: ['c', 'f'] } },
      required: ['city', 'unit'],
      additionalProperties: false,
    },
  },
};
export const add = {
  type: 'function',
  function: {
    name: 'add',
    parameters: {
      type: 'object',
      properties: { a: { type: 'integer', minimum: 0, maximum: 99 }, b: { type: 'integer' } },
      required: ['a', 'b'],
    },
  },
};
