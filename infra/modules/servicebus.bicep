// The trigger topic, filtered on application properties: Priority for work, Kind=gate for
// the release gate's broadcast (docs/patterns.md).
//
// Processors that may manage entities (BILLING_SERVICEBUS_MANAGE_ENTITIES=true, the Data
// Owner role below) create one subscription per instance, with a rule per priority they
// serve and one for the gate (rules are ORed), auto-deleted when idle, so that every idle
// instance wakes on a trigger. Without that right they share the subscriptions declared
// here, one per priority: a shared subscription hands each message to one of its receivers,
// so it must only hold priorities that every instance reading it serves (a low-only
// processor must not take a high trigger). Each also has the gate rule.
param name string
param location string
param tags object
param principalId string

resource namespace 'Microsoft.ServiceBus/namespaces@2022-10-01-preview' = {
  name: name
  location: location
  tags: tags
  sku: { name: 'Standard', tier: 'Standard' } // topics need Standard
  properties: { disableLocalAuth: true, minimumTlsVersion: '1.2' }
}

resource topic 'Microsoft.ServiceBus/namespaces/topics@2022-10-01-preview' = {
  parent: namespace
  name: 'triggers'
  properties: { defaultMessageTimeToLive: 'PT1H' }
}

resource subscriptions 'Microsoft.ServiceBus/namespaces/topics/subscriptions@2022-10-01-preview' = [
  for p in [ 'high', 'normal', 'low' ]: {
    parent: topic
    name: 'processors-${p}'
    properties: { maxDeliveryCount: 10, lockDuration: 'PT1M', defaultMessageTimeToLive: 'PT1H' }
  }
]

resource priorityRules 'Microsoft.ServiceBus/namespaces/topics/subscriptions/rules@2022-10-01-preview' = [
  for (p, i) in [ 'high', 'normal', 'low' ]: {
    parent: subscriptions[i]
    name: 'priority'
    properties: { filterType: 'CorrelationFilter', correlationFilter: { properties: { Priority: p } } }
  }
]

resource gateRules 'Microsoft.ServiceBus/namespaces/topics/subscriptions/rules@2022-10-01-preview' = [
  for (p, i) in [ 'high', 'normal', 'low' ]: {
    parent: subscriptions[i]
    name: 'gate'
    properties: { filterType: 'CorrelationFilter', correlationFilter: { properties: { Kind: 'gate' } } }
  }
]

// The controller's subscription: every accepted batch wakes it (its results follow soon).
resource controllerSubscription 'Microsoft.ServiceBus/namespaces/topics/subscriptions@2022-10-01-preview' = {
  parent: topic
  name: 'controller'
  properties: { maxDeliveryCount: 10, lockDuration: 'PT1M', defaultMessageTimeToLive: 'PT1H' }
}

resource controllerRule 'Microsoft.ServiceBus/namespaces/topics/subscriptions/rules@2022-10-01-preview' = {
  parent: controllerSubscription
  name: 'work'
  properties: { filterType: 'CorrelationFilter', correlationFilter: { properties: { Kind: 'work' } } }
}

// Azure Service Bus Data Owner: send, receive, and manage per-instance subscriptions.
var dataOwner = '090c5cfd-751d-490a-894a-3ce6f1109419'

resource grant 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  scope: namespace
  name: guid(namespace.id, principalId, dataOwner)
  properties: {
    principalId: principalId
    principalType: 'ServicePrincipal'
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', dataOwner)
  }
}

output fullyQualifiedNamespace string = '${namespace.name}.servicebus.windows.net'
